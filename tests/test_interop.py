"""Interop with the tools people already use, on a small real project built here with the CLI:
our patch files through `git apply`, `patch -p1` and `quilt push` (`export --quilt`) and `git am`
(`export --mbox`); our SHA256SUMS through `sha256sum -c --strict`; our compose override file through
the real `docker compose config`. Every tool must give exactly the tree the patches were made from."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import run_on_pty, run_subprocess
from helpers.deploy import check_mounts, compose_config
from helpers.env import isolated, need_tool
from helpers.snapshot import tree_bytes, write_tree

BASE = {
    "calc.py": b"def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
    "docs/crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "docs/nonl.txt": b"alpha\nbeta",
    "data/latin1.txt": b"caf\xe9\n\xff\xfe\n",
    "README": b"hello\n",
}
# patch 1 (import overlay): guard div; patch 2 (new + edit + refresh): builds on patch 1 in the
# same file, edits CRLF / no-final-newline / non-UTF-8 files, creates a file; patch 3 deletes one.
AFTER_1 = dict(BASE, **{"calc.py": BASE["calc.py"].replace(
    b"    return a / b\n", b"    if b == 0:\n        raise ZeroDivisionError(b)\n    return a / b\n")})
AFTER_2 = dict(AFTER_1, **{
    "calc.py": AFTER_1["calc.py"] + b"\n\ndef mul(a, b):\n    return a * b\n",
    "docs/crlf.txt": b"one\r\nTWO\r\nthree\r\n",
    "docs/nonl.txt": b"alpha\ngamma",
    "data/latin1.txt": b"caf\xe9\n\xfe\xff\n",
    "new/created.txt": b"created\r\nno newline",
})
AFTER_3 = {k: v for k, v in AFTER_2.items() if k != "README"}
NAMES = ["guard-div.patch", "mul-and-friends.patch", "drop-readme.patch"]
SUBJECTS = ["calc: guard div by zero", "calc: add mul; touch odd files", "drop the README"]


def run(cmd, cwd, check=True, env=None, **kw) -> subprocess.CompletedProcess:
    """A standard tool (git, patch, quilt, sha256sum) run on our output."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env, timeout=120, **kw)
    if check:
        assert proc.returncode == 0, (cmd, proc.stdout, proc.stderr)
    return proc


def pf(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_subprocess(None, *args, cwd=cwd, expect=0)


def read_tree(root: Path) -> dict[str, bytes]:
    return tree_bytes(root, skip=(".git", ".pc"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(upstream repo, project) with three patches, overlays generated. Built once per module;
    the environment is isolated the way conftest does it for each test."""
    with isolated(tmp_path_factory.mktemp("interop-home")):
        tmp = tmp_path_factory.mktemp("interop")
        up = tmp / "up"
        write_tree(up, BASE)
        run(["git", "init", "-q", "-b", "main"], up)
        run(["git", "add", "."], up)
        run(["git", "commit", "-q", "-m", "v1"], up)
        run(["git", "tag", "v1"], up)

        proj = tmp / "proj"
        proj.mkdir()
        pf(proj, "init")
        config = proj / "patchforge.toml"
        (proj / "entrypoint.sh").write_bytes(b"#!/bin/sh\nexec calc \"$@\"\n")
        config.write_text('compose-service = "app"\nartifacts = ["entrypoint.sh"]\n'
                          + config.read_text())
        pf(proj, "upstream", "add", "calc", "--git", str(up), "--at", "v1",
           "--install-root", "/opt/calc/lib")

        overlay = tmp / "calc.guarded.py"
        overlay.write_bytes(AFTER_1["calc.py"])
        pf(proj, "import", "overlay", str(overlay), "--upstream", "calc", "--path", "calc.py",
           "--name", "guard-div", "-m", SUBJECTS[0])

        # The worktree holds the files a patch is about (named with --file), as the series
        # before it leaves them.
        changed = sorted(p for p in AFTER_2 if AFTER_2[p] != AFTER_1.get(p))
        pf(proj, "new", "mul-and-friends", "-m", SUBJECTS[1], "--create",
           *[arg for path in changed for arg in ("--file", path)])
        work = proj / ".patchforge" / "work" / "calc"
        assert read_tree(work) == {p: AFTER_1.get(p, b"") for p in changed}
        write_tree(work, {p: AFTER_2[p] for p in changed})
        pf(proj, "refresh")

        pf(proj, "new", "drop-readme", "-m", SUBJECTS[2], "--file", "README")
        (work / "README").unlink()
        pf(proj, "refresh")
        # Overlays cannot delete a file in the image (patchforge refuses, rightly), so the
        # overlay tests use a copy of the project without the deleting patch.
        with_overlays = tmp / "proj-overlays"
        shutil.copytree(proj, with_overlays, symlinks=True)
        pf(with_overlays, "delete", "drop-readme")
        pf(with_overlays, "overlays")
        yield up, proj, with_overlays


@pytest.fixture
def v1_tree(built, tmp_path):
    tree = tmp_path / "tree"
    write_tree(tree, BASE)
    return tree


def series_files(proj: Path) -> list[Path]:
    names = (proj / "series" / "calc" / "series").read_text().split()
    assert names == NAMES
    return [proj / "series" / "calc" / n for n in names]


def test_patch_p1_applies_the_series_as_is(built, v1_tree):
    need_tool("patch")
    _, proj, _ = built
    for patch in series_files(proj):
        out = run(["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch",
                   "-i", str(patch)], v1_tree)
        assert b"offset" not in out.stdout and b"fuzz" not in out.stdout, out.stdout
    assert read_tree(v1_tree) == AFTER_3


def test_git_apply_applies_the_series_as_is(built, v1_tree):
    _, proj, _ = built
    for patch in series_files(proj):
        run(["git", "apply", "--check", str(patch)], v1_tree)
        run(["git", "apply", str(patch)], v1_tree)
    assert read_tree(v1_tree) == AFTER_3


def test_quilt_push_takes_the_exported_series(built, v1_tree, tmp_path):
    need_tool("quilt")
    _, proj, _ = built
    patches = tmp_path / "quilt-patches"
    pf(proj, "export", "--quilt", str(patches))
    assert (patches / "series").read_text().split() == NAMES
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QUILT_PATCHES": str(patches),
           "LC_ALL": "C"}
    out = run(["quilt", "--quiltrc", "/dev/null", "push", "-a"], v1_tree, env=env)
    assert b"Now at patch" in out.stdout and b"fuzz" not in out.stdout.lower()
    assert read_tree(v1_tree) == AFTER_3
    # and quilt can take them all back off again, to the untouched upstream
    run(["quilt", "--quiltrc", "/dev/null", "pop", "-a"], v1_tree, env=env)
    assert read_tree(v1_tree) == BASE


def test_git_am_takes_the_exported_mbox(built, tmp_path):
    up, proj, _ = built
    mbox = tmp_path / "series.mbox"
    pf(proj, "export", "--mbox", str(mbox))
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(up), str(clone)], tmp_path)
    run(["git", "checkout", "-q", "v1"], clone)
    run(["git", "am", "-q", "--keep-cr", str(mbox)], clone)
    subjects = run(["git", "log", "--format=%s", "--reverse", "v1..HEAD"], clone,
                   text=True).stdout.split("\n")[:-1]
    assert subjects == SUBJECTS
    assert read_tree(clone) == AFTER_3
    # each commit is exactly one patch: commit k's tree is the tree after patch k
    for k, expected in enumerate((AFTER_1, AFTER_2, AFTER_3)):
        rev = f"HEAD~{2 - k}"
        listed = run(["git", "ls-tree", "-r", "--name-only", rev], clone,
                     text=True).stdout.split()
        assert sorted(listed) == sorted(expected)


def test_sha256sums_pass_sha256sum_strict(built):
    need_tool("sha256sum")
    _, _, proj = built
    overlays = proj / "overlays"
    sums = (overlays / "SHA256SUMS").read_bytes()
    lines = sums.decode().splitlines()
    paths = [line.split("  ", 1)[1] for line in lines]
    assert paths == sorted(paths) and sums.endswith(b"\n")
    # every overlay (calc.py and the edited/created files; the deleted README has none) + artifact
    assert len(lines) == 6 and any(line.endswith("  artifacts/entrypoint.sh") for line in lines)
    out = run(["sha256sum", "-c", "--strict", "SHA256SUMS"], overlays, text=True)
    assert out.stdout.count(": OK") == len(lines)
    # and it catches a change: sha256sum is really checking our hashes
    target = next(overlays.rglob("calc.py"))
    original = target.read_bytes()
    try:
        target.write_bytes(original + b"# tampered\n")
        bad = run(["sha256sum", "-c", "--strict", "SHA256SUMS"], overlays, check=False,
                  text=True)
        assert bad.returncode == 1 and "calc.py: FAILED" in bad.stdout
    finally:
        target.write_bytes(original)


def test_overlay_files_are_the_patched_files(built):
    _, _, proj = built
    # overlays/calc/... with one profile, overlays/<profile>/calc/... with several
    roots = [fragment.parent / "calc" for fragment in (proj / "overlays").rglob("compose.yaml")]
    assert roots
    for root in roots:
        tree = read_tree(root)
        assert tree == {k: AFTER_2[k] for k in tree}
        assert set(tree) == {"calc.py", "docs/crlf.txt", "docs/nonl.txt", "data/latin1.txt",
                             "new/created.txt"}


def test_compose_override_file_through_docker_compose(built):
    """The real `docker compose config`: the user's compose.yaml plus the generated override."""
    _, _, proj = built
    fragments = sorted((proj / "overlays").rglob("compose.yaml"))
    assert fragments
    (proj / "compose.yaml").write_text("services:\n  app:\n    image: calc:1\n"
                                       "    volumes: ['./entrypoint.sh:/entrypoint.sh:ro']\n")
    for fragment in fragments:
        rel = fragment.relative_to(proj).as_posix()
        model = json.loads(compose_config(proj, "compose.yaml", rel).stdout)
        profile = fragment.parent.name if fragment.parent != proj / "overlays" else None
        targets = check_mounts(model, "app", proj / "overlays", profile,
                               {"calc": "/opt/calc/lib"}, keep={"/entrypoint.sh"})
        assert {t.removeprefix("/opt/calc/lib/") for t in targets} == {
            "calc.py", "docs/crlf.txt", "docs/nonl.txt", "data/latin1.txt", "new/created.txt"}
        assert all(Path(m["source"]).read_bytes() == AFTER_2[m["target"][len("/opt/calc/lib/"):]]
                   for m in model["services"]["app"]["volumes"] if m["target"] != "/entrypoint.sh")


# --- terminal conventions: colour only on a terminal, never with NO_COLOR ----------------------


@pytest.mark.parametrize("case", ["tty", "NO_COLOR", "--no-color", "TERM=dumb", "piped",
                                  "tty --json"])
def test_colour_only_on_a_terminal_and_never_with_no_color(built, case):
    import os

    _, proj, _ = built
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    args = [sys.executable, "-m", "patchforge"]
    if case == "--no-color":
        args.append("--no-color")
    args += ["status"] + (["--json"] if case == "tty --json" else [])
    if case == "NO_COLOR":
        env["NO_COLOR"] = "1"
    if case == "TERM=dumb":
        env["TERM"] = "dumb"
    # This test's cache is its own: bring the pinned upstream in first (see the final report:
    # status on a cache without the blobs takes the files for deleted).
    run([sys.executable, "-m", "patchforge", "fetch"], proj, env=env)
    if case == "piped":
        proc = run(args, proj, env=env)
        code, out = proc.returncode, proc.stdout + proc.stderr
    else:
        code, out = run_on_pty(args, proj, env)
    assert code == 0, out
    assert b"guard-div.patch" in out
    if case == "tty":
        assert b"\x1b[32m" in out and b"applies" in out  # green state column
    else:
        assert b"\x1b[" not in out, out
    if case == "tty --json":
        import json
        json.loads(out.replace(b"\r\n", b"\n"))


def test_export_mbox_of_profile_fixes_warns_what_git_am_meets(tmp_path, monkeypatch):
    """A gfx942-only fix of line 5, then a fix for every profile of line 8, made on its own
    base (without the gfx942 line): `export --mbox` said nothing, and `git am` stopped on the
    second message (it applies every message in one stack, without fuzz). gfx942's series
    holds both: the mbox is written as that series has each fix, `git am` takes it (with -3
    or without) and gives gfx942's overlay, and the export warns that it is gfx942's tree;
    a series of fixes for every profile gets no warning."""
    from helpers.cli import ok
    from helpers.project import UPSTREAM_FILES, git_project

    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    a = UPSTREAM_FILES["a.py"]
    for name, old, new, profiles in (("fix-942", b"line5\n", b"line5 gfx942\n", ["gfx942"]),
                                     ("fix-all", b"line8\n", b"line8 all\n", [])):
        overlay = tmp_path / f"{name}.overlay"
        overlay.write_bytes(a.replace(old, new))
        ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", name, "-m",
           name, *(["--profiles", *profiles] if profiles else []))
    mbox = tmp_path / "series.mbox"
    run = ok(root, "export", "--mbox", str(mbox))
    assert "warning: up's series has patches for some profiles only: the mbox is gfx942's " \
        "series (it holds every patch), each fix written as that series has it, and `git am` " \
        "gives gfx942's tree, not gfx950's" in run.err, run.err
    for three_way, ends in ((False, 0), (True, 0)):
        tree = tmp_path / f"am-{three_way}"
        subprocess.run(["git", "clone", "-q", str(tmp_path / "up-upstream"), str(tree)],
                       check=True)
        subprocess.run(["git", "-C", str(tree), "checkout", "-q", base], check=True)
        am = subprocess.run(["git", "-C", str(tree), "-c", "user.name=T", "-c",
                             "user.email=t@example.com", "am", "--keep-cr",
                             *(["-3"] if three_way else []), str(mbox)], capture_output=True)
        assert am.returncode == ends, am.stderr
    assert (tree / "a.py").read_bytes() == a.replace(b"line5\n", b"line5 gfx942\n") \
        .replace(b"line8\n", b"line8 all\n")
    ok(root, "delete", "fix-942")
    run = ok(root, "export", "--mbox", str(tmp_path / "all.mbox"))
    assert "warning" not in run.err, run.err


def test_export_mbox_of_no_profiles_series_warns_that_git_am_may_stop(tmp_path, monkeypatch):
    """A gfx942 fix, a gfx950 fix and a fix for every profile: no profile's series holds every
    message, so the mbox is written as the patches are and the export warns that `git am`
    meets other profiles' fixes in its one stack, naming `git am -3` (a guard: it holds on
    the earlier version too)."""
    from helpers.cli import ok
    from helpers.project import UPSTREAM_FILES, git_project

    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    a = UPSTREAM_FILES["a.py"]
    for name, old, new, profiles in (("fix-942", b"line5\n", b"line5 gfx942\n", ["gfx942"]),
                                     ("fix-950", b"line12\n", b"line12 gfx950\n", ["gfx950"]),
                                     ("fix-all", b"line8\n", b"line8 all\n", [])):
        overlay = tmp_path / f"{name}.overlay"
        overlay.write_bytes(a.replace(old, new))
        ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", name, "-m",
           name, *(["--profiles", *profiles] if profiles else []))
    run = ok(root, "export", "--mbox", str(tmp_path / "series.mbox"))
    assert "warning: up's series has patches for some profiles only, each made on its own " \
        "profile's series" in run.err and "`git am -3`" in run.err, run.err
