"""The way back from quilt: `export --quilt DIR`, work there with the real quilt (`quilt push
-a`, edits, `quilt refresh`, `quilt new`, `quilt delete`, the series file reordered), then
`import quilt DIR --update` takes it back into the series.

Before, nothing did: `import quilt` refused every name the series already had, and a refreshed
file copied over the series' patch kept quilt's diff (`Index:` lines, `a.orig/` prefixes,
timestamps), which `lint` called not byte-stable until `edit` + `refresh`."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.env import need_tool
from helpers.git import commit_files, git
from helpers.project import UPSTREAM_FILES, git_project
from helpers.snapshot import tree_bytes
from patchforge.formats.patchfile import parse_patch_file

A = UPSTREAM_FILES["a.py"]
B = UPSTREAM_FILES["pkg/b.py"]

# Two ways quilt is set up: none at all (`a.orig/` prefixes, `Index:` lines, timestamps), and
# a quiltrc of the kind people keep (a/ b/ prefixes, function context, no index, backups).
QUILTRCS = {
    "bare": "",
    "kept": 'QUILT_DIFF_OPTS="--show-c-function"\n'
            'QUILT_REFRESH_ARGS="-p ab --no-timestamps --no-index --backup"\n',
}


@pytest.fixture
def stack(tmp_path, monkeypatch):
    """A project with profiles and three fixes made through `import overlay`: fix-a (a.py),
    fix-b (pkg/b.py, gfx942 only), fix-d (a.py again, further down)."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    fixes = (("fix-a", "a.py", A.replace(b"line3\n", b"line3 fixed\n"), []),
             ("fix-b", "pkg/b.py", B.replace(b"y = 2\n", b"y = 22\n"), ["--profiles", "gfx942"]),
             ("fix-d", "a.py", A.replace(b"line18\n", b"line18 fixed\n"), []))
    for name, path, content, extra in fixes:
        overlay = tmp_path / f"{name}.overlay"
        overlay.write_bytes(content)
        ok(root, "import", "overlay", str(overlay), "--path", path, "--name", name,
           "-m", f"Fix {name}", *extra)
    return root, base


def quilt_env(tmp_path: Path, exported: Path, quiltrc: str) -> dict[str, str]:
    rc = tmp_path / "quiltrc"
    rc.write_text(quiltrc)
    return dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC=str(rc), EDITOR="false")


def quilt(checkout: Path, env: dict[str, str], *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["quilt", *args], cwd=checkout, env=env, input=stdin,
                          capture_output=True)
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.decode()


def quilt_new(checkout: Path, env: dict[str, str], name: str, path: str, content: bytes) -> None:
    """`quilt new NAME`, `quilt add PATH`, PATH changed to `content`, `quilt refresh`."""
    quilt(checkout, env, "new", name)
    quilt(checkout, env, "add", path)
    (checkout / path).write_bytes(content)
    quilt(checkout, env, "refresh")


def checkout_of(tmp_path: Path, base: str, name: str = "checkout") -> Path:
    checkout = tmp_path / name
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(checkout))
    git(checkout, "checkout", "-q", base)
    return checkout


def to_quilt(root: Path, base: str, tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """`export --quilt` into tmp_path/q, the environment quilt reads it by (no quiltrc), and a
    checkout of the upstream at the pin: (DIR, environment, checkout)."""
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported))
    return exported, quilt_env(tmp_path, exported, ""), checkout_of(tmp_path, base)


def patch_text(root: Path, name: str) -> str:
    return (root / "series/up" / name).read_text()


def lint_errors(root: Path) -> list[str]:
    run = run_cli(root, "lint")
    return [line for line in run.out.splitlines() if line.startswith("error")]


class FifoFeeder:
    """Feeds `data` to each reader of the FIFO at `path` from a thread, never leaving one
    blocked, and records whether anyone read it: a command that must not read it is checked by
    `read` staying empty."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path, self.data = path, data
        self.read: list[bool] = []
        self.done = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._feed, daemon=True).start()

    def _feed(self) -> None:
        # A reader of the FIFO is there when a non-blocking open for writing succeeds.
        while not self.done.wait(0.05):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            self.read.append(True)
            os.write(fd, self.data)
            os.close(fd)  # (and again, for each read)


@pytest.mark.parametrize("how", ["--diffstat", "QUILT_REFRESH_ARGS"])
def test_a_diffstat_only_quilt_refresh_is_nothing_to_take_back(stack, tmp_path, how):
    """`quilt refresh --diffstat` (or a quiltrc with it) of a patch nobody changed rewrites
    its file with a diffstat under quilt's own `---`, the diff and header the same: the import
    said "updated up/fix-d.patch" and wrote quilt's diffstat and a second `---` into the
    series' patch. It is nothing to take back, the series byte for byte as it was; a patch
    whose diff quilt did change, refreshed the same way, is still taken back."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    if how == "QUILT_REFRESH_ARGS":
        env = quilt_env(tmp_path, exported, 'QUILT_REFRESH_ARGS="--diffstat"\n')
    quilt(checkout, env, "push", "-a")
    kept = tree_bytes(root / "series")
    before = (exported / "fix-d.patch").read_bytes()
    quilt(checkout, env, "refresh", *(("--diffstat",) if how == "--diffstat" else ()))
    assert (exported / "fix-d.patch").read_bytes() != before
    assert b" 1 file changed, 1 insertion(+), 1 deletion(-)\n" in \
        (exported / "fix-d.patch").read_bytes()
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing to take back" in run.out and "updated" not in run.out, run.out
    assert tree_bytes(root / "series") == kept
    # Run again: the same answer (quilt's file is still its own).
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out
    # The mirror: a change of the diff, refreshed with the diffstat, is taken back.
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line19\n", b"line19 fixed too\n"))
    quilt(checkout, env, "refresh", *(("--diffstat",) if how == "--diffstat" else ()))
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-d.patch\n" in run.out, run.out
    assert "+line19 fixed too\n" in patch_text(root, "fix-d.patch")
    ok(root, "overlays")
    assert (root / "overlays/gfx942/up/a.py").read_bytes() == a.read_bytes()


@pytest.mark.parametrize("quiltrc", sorted(QUILTRCS))
def test_quilt_refresh_new_and_header_come_back_into_the_series(stack, tmp_path, quiltrc):
    """The walk-through: export, `quilt push -a` on the upstream's files, an earlier patch
    edited and refreshed (a later one then applies at an offset), a new patch with a header
    written by `quilt header -r`. Taken back: the refreshed patch keeps its header (Description,
    Base) with git's diff, the new one joins at its place with the fields lint
    asks for, the later one is made again where its lines moved; status and lint are clean,
    the overlays hold what quilt's tree holds, and the next export into DIR works."""
    root, base = stack
    exported = tmp_path / "q"
    run = ok(root, "export", "--quilt", str(exported))
    assert f"next: `QUILT_PATCHES={exported} quilt push -a` in the upstream's files at the " \
        f"pin (main, {base[:12]}); after quilt refresh, `patchforge import quilt {exported} " \
        "--update` takes the changes back" in run.out, run.out
    env = quilt_env(tmp_path, exported, QUILTRCS[quiltrc])
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "pop", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line1\n", b"line1\nadded one\nadded two\n"))
    quilt(checkout, env, "refresh")
    assert "offset 2 lines" in quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "fix-c.patch", "pkg/new.py", b"new = 1\n")
    quilt(checkout, env, "header", "-r", stdin=b"Description: Add the new module\n")
    assert (exported / "fix-a.patch").read_bytes() != (root / "series/up/fix-a.patch").read_bytes()
    # Exporting again would overwrite quilt's work: refused, and the hint is the way back.
    run = run_cli(root, "export", "--quilt", str(exported))
    assert run.rc == 2 and f"`patchforge import quilt {exported} --update` takes it back" \
        in run.err, run.err

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch\n" in run.out and "added up/fix-c.patch\n" in run.out
    assert "updated up/fix-d.patch (its lines moved" in run.out, run.out
    assert (root / "series/up/series").read_text() == \
        "fix-a.patch\nfix-b.patch\nfix-d.patch\nfix-c.patch\n"
    fix_a = patch_text(root, "fix-a.patch")
    assert "Description: Fix fix-a\n" in fix_a and "Last-Update: 2024-05-01\n" in fix_a
    assert f"Base: {base}\n" in fix_a and "diff --git a/a.py b/a.py\n" in fix_a
    assert "Index:" not in fix_a and ".orig" not in fix_a and "+added one\n" in fix_a
    fix_c = patch_text(root, "fix-c.patch")
    assert fix_c.startswith("Description: Add the new module\n")
    assert "Upstream: up\n" in fix_c and f"Base: {base}\n" in fix_c \
        and "new file mode 100644\n" in fix_c
    assert ok(root, "status").rc == 0
    assert lint_errors(root) == []
    ok(root, "overlays")
    overlay = tree_bytes(root / "overlays" / "gfx942" / "up")
    assert overlay == {p: (checkout / p).read_bytes() for p in ("a.py", "pkg/b.py", "pkg/new.py")}
    # gfx950's overlays have everything but fix-b (Profiles: gfx942, kept).
    assert tree_bytes(root / "overlays" / "gfx950" / "up") == \
        {p: (checkout / p).read_bytes() for p in ("a.py", "pkg/new.py")}
    # The export record learned the quilt files taken back: exporting again replaces them.
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "fix-a.patch").read_bytes() == (root / "series/up/fix-a.patch").read_bytes()
    # And quilt takes the canonical series as well.
    quilt(checkout, env, "pop", "-a")
    quilt(checkout, env, "push", "-a")
    assert a.read_bytes() == overlay["a.py"]
    # Taking it back again finds nothing to do.
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out


def test_a_patch_deleted_in_quilt_is_kept_unless_delete_says_so(stack, tmp_path):
    """`quilt delete fix-b` takes it out of quilt's series. Taken back without a word, the fix
    would be gone: refused (exit 2, naming it, nothing written); with --delete it leaves the
    series and is kept under deleted/, as `patchforge delete` keeps it."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "delete", "fix-b.patch")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "fix-b.patch is in the up series but not in" in run.err, run.err
    assert "--delete" in run.err
    assert tree_bytes(root / "series") == before
    fix_b = (root / "series/up/fix-b.patch").read_bytes()
    run = ok(root, "import", "quilt", str(exported), "--update", "--delete")
    assert "deleted up/fix-b.patch (kept as series/up/deleted/fix-b.patch)" in run.out
    assert (root / "series/up/deleted/fix-b.patch").read_bytes() == fix_b
    assert (root / "series/up/series").read_text() == "fix-a.patch\nfix-d.patch\n"
    assert ok(root, "status").rc == 0


def test_a_patch_deleted_in_quilt_after_the_series_changed_it_keeps_the_change(stack,
                                                                              tmp_path):
    """fix-a changed in the series after the export (edit + refresh), then `quilt delete -r
    fix-a.patch` in quilt, which never had that change: told "quilt delete?", the hinted
    --delete put fix-a, with the series' change, under deleted/, status and check green, the
    change in no overlay. A deletion on one side and a change on the other is refused, with or
    without --delete, naming the patch, nothing written; each way on it names works: the
    series' patch listed in quilt again is nothing to take back, `patchforge delete` drops it
    as asked."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    quilt(checkout, env, "delete", "-r", "fix-a.patch")
    for extra in ([], ["--delete"]):
        before = untouched(root, exported)
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert "fix-a.patch changed in the up series since `export --quilt` wrote it, and " \
            f"{exported / 'series'} no longer lists it (quilt delete? quilt rename?): nothing " \
            "was taken back, with or without --delete" in run.err, run.err
        assert "`patchforge delete fix-a`" in run.err, run.err
        assert untouched(root, exported) == before
    assert "+line4 series" in patch_text(root, "fix-a.patch")

    # The way on that keeps it: the series' patch copied into DIR and listed again.
    shutil.copyfile(root / "series/up/fix-a.patch", exported / "fix-a.patch")
    series = exported / "series"
    series.write_text("fix-a.patch\n" + series.read_text())
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing to take back" in run.out, run.text
    assert "+line4 series" in patch_text(root, "fix-a.patch")
    # The way on that drops it: deleted in the series too.
    series.write_text(series.read_text().replace("fix-a.patch\n", ""))
    ok(root, "delete", "fix-a")
    ok(root, "import", "quilt", str(exported), "--update")
    assert (root / "series/up/series").read_text() == "fix-b.patch\nfix-d.patch\n"
    assert "+line4 series" in (root / "series/up/deleted/fix-a.patch").read_text()


def test_the_series_patch_copied_into_quilt_as_the_refusal_says_is_quilts_to_change(stack,
                                                                                  tmp_path):
    """The way on a refusal names for a fix deleted in quilt and changed in the series: the
    series' patch copied into DIR and listed again ("nothing to take back"). Then `quilt
    push`, a line changed, `quilt refresh`: the next import was refused as a change on both
    sides ("make one of them hold both changes"; quilt's file held both already), and again
    after each way on, until `export --quilt` was run again. The series' patch copied into DIR
    is recorded as the export's: quilt's refresh of it is quilt's change, taken back with the
    series' one kept."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    quilt(checkout, env, "delete", "-r", "fix-a.patch")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "copy " in run.err and "list it in" in run.err, run.text
    shutil.copyfile(root / "series/up/fix-a.patch", exported / "fix-a.patch")
    series = exported / "series"
    series.write_text("fix-a.patch\n" + series.read_text())
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out

    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "pop", "-a")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    text = patch_text(root, "fix-a.patch")
    assert "+line4 series" in text and "+line5 quilt" in text and "+line3 fixed" in text
    assert ok(root, "import", "quilt", str(exported), "--update").out.count("nothing to take")
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    ok(root, "overlays")
    for profile in ("gfx942", "gfx950"):
        assert b"line4 series\nline5 quilt\n" in \
            (root / "overlays" / profile / "up/a.py").read_bytes()


def test_two_patches_deleted_in_quilt_are_each_kept_under_a_name_of_their_own(stack,
                                                                              tmp_path):
    """fix-a and fix-a.2 both deleted in quilt, deleted/ holding an older, different
    fix-a.patch: --update --delete kept both as deleted/fix-a.2.patch, the second over the
    first (exit 0, fix-a in no file), since the kept names were all chosen before anything
    was written. Each is kept under a name of its own."""
    root, base = stack
    old = (root / "series/up/fix-a.patch").read_bytes()
    for name in ("fix-a", "fix-b", "fix-d"):
        ok(root, "delete", name)
    overlay = tmp_path / "again.overlay"
    overlay.write_bytes(A.replace(b"line5\n", b"line5 again\n"))
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix-a", "-m", "again")
    overlay.write_bytes(A.replace(b"line5\n", b"line5 again\n").replace(b"line12\n",
                                                                       b"line12 too\n"))
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix-a.2",
       "-m", "a again")
    ours = {n: (root / "series/up" / n).read_bytes() for n in ("fix-a.patch", "fix-a.2.patch")}
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "delete", "fix-a.2.patch")
    quilt(checkout, env, "delete", "fix-a.patch")
    ok(root, "import", "quilt", str(exported), "--update", "--delete")
    kept = sorted((p.read_bytes() for p in (root / "series/up/deleted").glob("fix-a*.patch")))
    assert kept == sorted([old, *ours.values()])


def test_the_order_follows_quilts_series_file_where_the_patches_still_apply(stack, tmp_path):
    """Lines moved in quilt's series file: the series takes the new order when every patch
    still applies. An order that puts a fix before the one it is built on is refused, naming
    it and its series line, with nothing written."""
    root, base = stack
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported))
    (exported / "series").write_text("fix-b.patch\nfix-d.patch\nfix-a.patch\n")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "reordered up's series" in run.out
    assert (root / "series/up/series").read_text() == "fix-b.patch\nfix-d.patch\nfix-a.patch\n"
    assert ok(root, "status").rc == 0 and lint_errors(root) == []

    # fix-e changes the line fix-b made: before fix-b it applies nowhere.
    ok(root, "new", "fix-e", "--file", "pkg/b.py", "--profiles", "gfx942", "-m", "Fix y again")
    work = root / ".patchforge/work/up/pkg/b.py"
    work.write_bytes(work.read_bytes().replace(b"y = 22\n", b"y = 222\n"))
    ok(root, "refresh")
    ok(root, "export", "--quilt", str(exported))
    (exported / "series").write_text("fix-e.patch\nfix-b.patch\nfix-d.patch\nfix-a.patch\n")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert f"{exported / 'series'}:1: fix-e.patch would no longer apply" in run.err, run.err
    assert tree_bytes(root / "series") == before


def test_a_patch_changed_in_quilt_and_in_the_series_is_refused(stack, tmp_path):
    """The series' patch changed after the export (a colleague's commit pulled) and quilt's
    too: taking quilt's back would lose the series' change. Refused, naming the quilt series
    line, nothing written. A patch the series gained after the export is kept in its place."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-b.patch")
    (checkout / "pkg/b.py").write_bytes(B.replace(b"y = 2\n", b"y = 22\n")
                                        .replace(b"z = 3\n", b"z = 33\n"))
    quilt(checkout, env, "refresh")
    path = root / "series/up/fix-b.patch"
    path.write_bytes(path.read_bytes().replace(b"Description: Fix fix-b\n",
                                               b"Description: Fix y, said better\n"))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert f"{exported / 'series'}:2: fix-b.patch changed in quilt and in the up series" \
        in run.err, run.err
    assert tree_bytes(root / "series") == before

    # Put back as exported: quilt's change comes in; a fix added since stays after fix-d.
    path.write_bytes(path.read_bytes().replace(b"Description: Fix y, said better\n",
                                               b"Description: Fix fix-b\n"))
    overlay = tmp_path / "fix-f.overlay"
    overlay.write_bytes(A.replace(b"line10\n", b"line10 fixed\n"))
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix-f", "-m", "F")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-b.patch" in run.out
    assert "fix-f.patch joined the series after the export; kept in its place" in run.err
    assert (root / "series/up/series").read_text() == \
        "fix-a.patch\nfix-b.patch\nfix-d.patch\nfix-f.patch\n"
    assert b"+z = 33\n" in path.read_bytes() and b"Profiles: gfx942\n" in path.read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_rename_and_an_executable_script_survive_quilts_refresh(tmp_path, monkeypatch):
    """quilt's diffs carry no modes and no renames: `quilt refresh` of a patch that renamed
    a.py to pkg/c.py and created an executable script writes a deletion, a creation and a
    plain file. Taken back, the patch renames again (git's similarity score) and the script is
    `new file mode 100755`, as the series' patch had them; `git apply` of it gives quilt's
    tree, modes included."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path)
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(fork))
    git(fork, "mv", "a.py", "pkg/c.py")
    (fork / "pkg/c.py").write_bytes(A.replace(b"line3\n", b"line3 moved\n"))
    (fork / "run.sh").write_bytes(b"#!/bin/sh\necho run\n")
    os.chmod(fork / "run.sh", 0o755)
    git(fork, "add", "-A")
    git(fork, "commit", "-qm", "Move a to c and add a runner")
    incoming = tmp_path / "incoming"  # a colleague's patch, made by `git diff -M`
    incoming.mkdir()
    (incoming / "series").write_text("move.patch\n")
    (incoming / "move.patch").write_bytes(
        b"Description: Move a to c and add a runner\nAuthor: A <a@example.com>\n\n---\n"
        + subprocess.run(["git", "diff", "-M", base, "HEAD"], cwd=fork, check=True,
                         capture_output=True).stdout)
    ok(root, "import", "quilt", str(incoming))
    name = "move.patch"
    assert "rename from a.py\n" in patch_text(root, name)
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    assert os.stat(checkout / "run.sh").st_mode & 0o111
    (checkout / "pkg/c.py").write_bytes(A.replace(b"line3\n", b"line3 moved\n")
                                        .replace(b"line9\n", b"line9 too\n"))
    quilt(checkout, env, "refresh")
    refreshed = (exported / name).read_text()
    assert "rename from" not in refreshed and "new file mode" not in refreshed

    assert f"updated up/{name}\n" in ok(root, "import", "quilt", str(exported), "--update").out
    text = patch_text(root, name)
    assert "rename from a.py\nrename to pkg/c.py\n" in text and "+line9 too\n" in text
    assert "diff --git a/run.sh b/run.sh\nnew file mode 100755\n" in text
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    # git apply of the patch gives quilt's tree, the script executable.
    again = tmp_path / "again"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(again))
    git(again, "checkout", "-q", base)
    git(again, "apply", str(root / "series/up" / name))
    assert tree_bytes(again, skip=(".git",)) == tree_bytes(checkout, skip=(".git", ".pc"))
    assert os.stat(again / "run.sh").st_mode & 0o111


def test_one_profiles_series_goes_to_quilt_and_comes_back(tmp_path, monkeypatch):
    """Two fixes of one line, one per profile: each profile's overlays apply one of them, but
    quilt applies every exported patch in one stack, and `quilt push -a` stopped on the
    second (the export said nothing). The export now warns and `--profile P` exports the
    stack P's overlays are made from, which quilt pushes; taken back, a patch `quilt new`
    made there is for P, and the other profile's fix stays as it was."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    for profile in ("gfx942", "gfx950"):
        overlay = tmp_path / f"{profile}.overlay"
        overlay.write_bytes(A.replace(b"line3\n", f"line3 {profile}\n".encode()))
        ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name",
           f"fix-{profile}", "-m", f"Line 3 on {profile}", "--profiles", profile)
    everything = tmp_path / "all"
    run = ok(root, "export", "--quilt", str(everything))
    assert "`--profile P` exports one profile's series" in run.err, run.err
    checkout = checkout_of(tmp_path, base)
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, capture_output=True,
                          env=quilt_env(tmp_path, everything, ""))
    assert proc.returncode != 0 and b"fix-gfx950.patch does not apply" in proc.stdout

    exported = tmp_path / "q950"
    run = ok(root, "export", "--quilt", str(exported), "--profile", "gfx950")
    assert "warning" not in run.err
    assert (exported / "series").read_text() == "fix-gfx950.patch\n"
    checkout = checkout_of(tmp_path, base, "checkout-gfx950")
    env = quilt_env(tmp_path, exported, "")
    quilt(checkout, env, "push", "-a")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line3 gfx950\n", b"line3 gfx950 and more\n"))
    quilt(checkout, env, "refresh")
    quilt_new(checkout, env, "fix-more.patch", "pkg/b.py", B.replace(b"x = 1\n", b"x = 950\n"))
    fix_942 = (root / "series/up/fix-gfx942.patch").read_bytes()

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-gfx950.patch\nadded up/fix-more.patch\n" in run.out, run.out
    # the other profile's fix is said as kept, and nothing else is noted
    assert run.err.count("note") == 1 and \
        "up/fix-gfx942.patch is not in gfx950's series" in run.err, run.err
    assert (root / "series/up/series").read_text() == \
        "fix-gfx942.patch\nfix-gfx950.patch\nfix-more.patch\n"
    assert (root / "series/up/fix-gfx942.patch").read_bytes() == fix_942
    assert "Profiles: gfx950\n" in patch_text(root, "fix-more.patch")
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    ok(root, "overlays")
    assert tree_bytes(root / "overlays/gfx950/up") == \
        {p: (checkout / p).read_bytes() for p in ("a.py", "pkg/b.py")}
    assert tree_bytes(root / "overlays/gfx942/up") == \
        {"a.py": A.replace(b"line3\n", b"line3 gfx942\n")}


@pytest.mark.parametrize("mode", ["kill", "interrupt", "raise"])
def test_a_run_cut_short_at_any_write_loses_no_fix_and_running_it_again_finishes(
        stack, tmp_path, mode):
    """Killed at each write step (PATCHFORGE_FAULT, exit 137, as kill -9): every listed patch
    exists, the fix quilt deleted is in the series or under deleted/, and the same command run
    again ends where a run without the kill ends (it refused a patch it had itself written as
    changed in the series since the export, and a new patch's file it had written as one in
    the way). Cut short by Ctrl-C or a failed write (EIO) instead, it puts back what it wrote:
    the series and DIR are as they were, as the message says ("nothing was left
    half-written"; before, the first refreshed patch was taken and the rest not, and the run
    again called them "taken back again"), or, past the last write, whole."""
    import shutil

    from helpers.cli import run_subprocess

    root, base = stack
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    root = root.rename(prepared / "project")
    exported = prepared / "q"
    ok(root, "ledger")  # a stack that keeps one: the ledger and history are written too
    ok(root, "export", "--quilt", str(exported))
    env = quilt_env(tmp_path, exported, "")
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line1\n", b"line1\nadded\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "delete", "fix-b.patch")
    quilt_new(checkout, env, "fix-c.patch", "pkg/new.py", b"new = 1\n")
    fix_b = (root / "series/up/fix-b.patch").read_bytes()

    def copy(name: str) -> tuple[Path, Path]:
        shutil.copytree(prepared, tmp_path / name, symlinks=True)
        return tmp_path / name / "project", tmp_path / name / "q"

    def state(project: Path, q: Path) -> tuple[dict, dict]:
        """series/ and DIR as a user sees them: the hidden temporary file a killed write
        leaves (which no command reads) and the history's times left out."""
        series = {k: re.sub(rb'"time":"[^"]*"', b"", v)
                  for k, v in tree_bytes(project / "series", skip=()).items()
                  if not k.endswith(".tmp")}
        return series, {k: v for k, v in tree_bytes(q).items()
                        if not k.endswith(("~", ".tmp"))}

    clean, clean_q = copy("clean")
    old = state(*copy("old"))
    args = ("import", "quilt", "--update", "--delete")
    run_subprocess(clean, *args[:2], str(clean_q), *args[2:], expect=0)
    new = state(clean, clean_q)
    hits = 0
    faults = {"PATCHFORGE_FAULT_MODE": mode} if mode != "kill" else {}
    for step in ("write", "fsync", "rename") + (("dirsync",) if mode != "kill" else ()):
        for n in range(1, 40):
            project, q = copy(f"{step}-{n}")
            proc = run_subprocess(project, *args[:2], str(q), *args[2:],
                                  env={"PATCHFORGE_FAULT": f"{step}:{n}", **faults})
            if proc.returncode == 0:
                break
            hits += 1
            assert proc.returncode == {"kill": 137, "interrupt": 130, "raise": 2}[mode], \
                proc.stderr.decode()
            listed = (project / "series/up/series").read_text().split()
            assert all((project / "series/up" / name).is_file() for name in listed)
            assert fix_b in {p.read_bytes() for p in (project / "series/up").rglob("fix-b*")}
            if mode != "kill":
                assert state(project, q) in (old, new), (step, n)
                assert ("nothing was left half-written" in proc.stderr.decode()) == \
                    (state(project, q) == old), (step, n, proc.stderr.decode())
            again = run_cli(project, *args[:2], str(q), *args[2:])
            assert again.rc == 0, (step, n, again.text)
            assert mode == "kill" or "taken back again" not in again.err, (step, n, again.err)
            assert state(project, q) == new, (step, n)
        else:
            pytest.fail(f"the fault {step} never stopped firing")
    assert hits >= 9


def test_a_change_quilt_made_to_an_empty_upstream_file_comes_back(tmp_path, monkeypatch):
    """The upstream has an empty file (pkg/__init__.py: vLLM and AITER have dozens); in quilt,
    `quilt add` it to a fix, a line written, `quilt refresh`: quilt writes an empty old file
    as `--- /dev/null`, which `quilt push` (GNU patch) applies to the empty file. Taken back,
    it was refused ("would no longer apply in the series ... `quilt push` up to it, resolve,
    `quilt refresh`", which writes the same patch again): the change could never come back.
    It is read as the change of that empty file it is."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, {**UPSTREAM_FILES, "pkg/__init__.py": b""})
    overlay = tmp_path / "fix-a.overlay"
    overlay.write_bytes(A.replace(b"line3\n", b"line3 fixed\n"))
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix-a", "-m", "Fix a")
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "add", "pkg/__init__.py")
    (checkout / "pkg/__init__.py").write_bytes(b"X = 1\n")
    quilt(checkout, env, "refresh")
    assert "--- /dev/null" in (exported / "fix-a.patch").read_text()  # as quilt writes it
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    text = patch_text(root, "fix-a.patch")
    assert "--- a/pkg/__init__.py" in text and "+X = 1" in text and "new file" not in text, text
    assert "+line3 fixed" in text
    assert ok(root, "status").rc == 0
    ok(root, "overlays")
    assert (root / "overlays/up/pkg/__init__.py").read_bytes() == b"X = 1\n"


def test_a_patch_quilt_emptied_and_a_file_in_the_way_are_refused(stack, tmp_path):
    """`quilt refresh` of a patch whose change was undone in the tree writes its header alone
    ("Nothing in patch"): taken back, the fix would be gone without a word. Refused, naming
    the quilt file, nothing written; the hint's way (its line out of DIR/series, --delete)
    keeps it under deleted/. A new patch whose name an unlisted file of the series already has
    is refused too, naming the file; and --delete alone is no command."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-b.patch")
    (checkout / "pkg/b.py").write_bytes(B)
    assert "Nothing in patch" in quilt(checkout, env, "refresh")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and f"{exported / 'fix-b.patch'}: fix-b.patch: quilt's patch holds no " \
        "change" in run.err and "--delete" in run.err, run.err
    assert tree_bytes(root / "series") == before
    run = run_cli(root, "import", "quilt", str(exported), "--delete")
    assert run.rc == 2 and "--delete goes with --update" in run.err
    (exported / "series").write_text("fix-a.patch\nfix-d.patch\n")
    fix_b = (root / "series/up/fix-b.patch").read_bytes()
    ok(root, "import", "quilt", str(exported), "--update", "--delete")
    assert (root / "series/up/deleted/fix-b.patch").read_bytes() == fix_b

    quilt(checkout, env, "pop", "-a")
    quilt_new(checkout, env, "fix-z.patch", "pkg/b.py", B.replace(b"z = 3\n", b"z = 0\n"))
    stray = root / "series/up/fix-z.patch"
    stray.write_bytes(b"Description: something else\n")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and f"a patch file named fix-z.patch is already there, not listed in " \
        f"the up series: {stray}" in run.err, run.err
    assert tree_bytes(root / "series") == before


def test_an_open_edit_is_never_reset_and_a_refreshed_one_is_closed(stack, tmp_path):
    """An edit of fix-d open with a change not refreshed: taking quilt's fix-a back would make
    its worktree (made on the old fix-a) a lie, and its change would be lost to a later edit.
    Refused, as `move` and `delete` refuse, nothing written; once refreshed, the update goes
    through and closes the edit, whose worktree was made on the series before it."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line1\n", b"line1\nadded\n"))
    quilt(checkout, env, "refresh")
    ok(root, "edit", "fix-d")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line19\n", b"line19 too\n"))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "fix-d.patch is being edited" in run.err, run.err
    # The refusal names the command the user ran (it said "`move` refused").
    assert "`import quilt --update` refused" in run.err and "`move`" not in run.err, run.err
    assert tree_bytes(root / "series") == before and work.is_file()
    ok(root, "refresh")
    ok(root, "edit", "fix-d")
    ok(root, "import", "quilt", str(exported), "--update")
    assert not work.exists()
    assert b"+line19 too\n" in (root / "series/up/fix-d.patch").read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def profiles_stack(tmp_path: Path, monkeypatch, fixes) -> tuple[Path, str]:
    """A project with profiles gfx942 and gfx950 whose fixes of a.py are made as a user makes
    them, each on its own base (`new`, a line changed in the worktree, `refresh`): `fixes` is
    [(name, old line, new line, profiles or None)]."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    for name, old, new, profiles in fixes:
        ok(root, "new", name, "--file", "a.py", "-m", f"Fix {name}",
           *(["--profiles", profiles] if profiles else []))
        work = root / ".patchforge/work/up/a.py"
        work.write_bytes(work.read_bytes().replace(old, new))
        ok(root, "refresh")
    assert lint_errors(root) == []
    return root, base


def untouched(root: Path, exported: Path) -> tuple:
    """What a refused update must leave as it was: series/ (series file, patches), the lock,
    and quilt's directory with the export's record."""
    return (tree_bytes(root / "series"), (root / "upstream.lock").read_bytes(),
            tree_bytes(exported))


def change_fix_a_in_series(root: Path) -> None:
    """fix-a changed in the series after an export (`edit`, its line4 changed, `refresh`): a
    change quilt's copy of it never had."""
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line4\n", b"line4 series\n"))
    ok(root, "refresh")


def changed_in_quilt(root: Path, base: str, tmp_path: Path, export: list[str], old: bytes,
                     new: bytes, refresh: tuple[str, ...] = ()) -> tuple[Path, Path, str]:
    """`export --quilt tmp_path/q EXPORT...`, `quilt push -a` in a checkout at the pin, the line
    `old` of a.py made `new` and `quilt refresh REFRESH...`: (DIR, the checkout, quilt's push
    output)."""
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported), *export)
    env = quilt_env(tmp_path, exported, "")
    checkout = checkout_of(tmp_path, base)
    pushed = quilt(checkout, env, "push", "-a")
    a = checkout / "a.py"
    assert old in a.read_bytes()
    a.write_bytes(a.read_bytes().replace(old, new))
    quilt(checkout, env, "refresh", *refresh)
    return exported, checkout, pushed


def refused_update(root: Path, exported: Path) -> str:
    """`import quilt DIR --update`, which must be refused with nothing written: its stderr."""
    before = untouched(root, exported)
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert "nothing was taken back" in run.err, run.err
    assert untouched(root, exported) == before
    return run.err


# fix-942 (gfx942 only) changes line8, inside the context of fix-all's line10 (every profile).
BELOW = (("fix-942", b"line8\n", b"line8 gfx942\n", "gfx942"),
         ("fix-all", b"line10\n", b"line10 all\n", None))


@pytest.mark.parametrize("export", [["--profile", "gfx942"], []], ids=["profile", "whole"])
def test_an_every_profile_fix_changed_on_top_of_a_profiles_fix_is_carried_to_its_base(
        tmp_path, monkeypatch, export):
    """In the tree of `export --quilt --profile gfx942` (or of the whole series), fix-all sits
    on fix-942, whose line is in its context: the export writes it as gfx942's series has it
    (that line in its context), quilt pushes it without fuzz, and `quilt refresh` writes
    that context. Taken back, the change was refused ("quilt's diff does not apply on
    its base"), since fix-all is made on the upstream without fix-942. Now the change is
    carried from quilt's tree back to fix-all's base (git's 3-way merge, as the overlays
    carry fix-all into gfx942's series): fix-all's diff holds the upstream's line8, status and
    lint are clean, gfx942's overlay is quilt's tree and gfx950's has fix-all alone."""
    root, base = profiles_stack(tmp_path, monkeypatch, BELOW)
    exported, checkout, pushed = changed_in_quilt(root, base, tmp_path, export, b"line11\n",
                                                  b"line11 all too\n")
    assert "fuzz" not in pushed and "offset" not in pushed, pushed
    assert " line8 gfx942\n" in (exported / "fix-all.patch").read_text()
    fix_942 = (root / "series/up/fix-942.patch").read_bytes()

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-all.patch\n" in run.out, run.out
    fix_all = patch_text(root, "fix-all.patch")
    assert " line8\n line9\n-line10\n-line11\n+line10 all\n+line11 all too\n" in fix_all
    assert "gfx942" not in fix_all and "Profiles" not in fix_all
    assert (root / "series/up/fix-942.patch").read_bytes() == fix_942
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    ok(root, "overlays")
    assert (root / "overlays/gfx942/up/a.py").read_bytes() == (checkout / "a.py").read_bytes()
    assert (root / "overlays/gfx950/up/a.py").read_bytes() == \
        A.replace(b"line10\n", b"line10 all\n").replace(b"line11\n", b"line11 all too\n")


@pytest.mark.parametrize("strip", ["-p1", "-p0"])
def test_a_change_that_does_not_carry_back_to_the_fixs_base_is_refused(tmp_path, monkeypatch,
                                                                       strip):
    """fix-all changed in gfx942's tree on fix-942's own line: on fix-all's base (without
    fix-942) that change has no place. Refused, naming the quilt file, fix-942 and that
    fix-all is for every profile; nothing written (series, patches, lock, quilt's
    directory and its record). Refreshed with `quilt refresh -p0` (listed `fix-all.patch
    -p0`) the refusal named the file and no line: its line too."""
    root, base = profiles_stack(tmp_path, monkeypatch, BELOW)
    exported, _, _ = changed_in_quilt(root, base, tmp_path, ["--profile", "gfx942"],
                                      b"line8 gfx942\n", b"line8 gfx942 and all\n",
                                      refresh=(strip,))
    if strip == "-p0":
        assert "fix-all.patch -p0" in (exported / "series").read_text()
    err = refused_update(root, exported)
    lines = (exported / "fix-all.patch").read_bytes().splitlines()
    # The line quilt's diff of a.py starts at, named as other refusals name a line.
    section = next(n for n, line in enumerate(lines, 1)
                   if line.startswith((b"--- checkout.orig/a.py", b"--- a.py.orig")))
    assert f"{exported / 'fix-all.patch'}:{section}: fix-all.patch (every profile): quilt's " \
        "change to a.py does not carry back onto the fix's own base: it meets lines that " \
        "fix-942.patch (gfx942) changed below it in quilt's tree" in err, err


def test_a_p2_patch_that_does_not_carry_back_is_refused_naming_its_sections_line(
        tmp_path, monkeypatch):
    """A patch made elsewhere (`diff -u` of two trees one directory down) put on top of the
    whole series' tree with `quilt import -p2` and pushed, changing fix-942's own line: new
    in quilt, it is for every profile, and on its base (without fix-942) the change has no
    place. Refused naming the quilt file; the line of its section of a.py was missing (the
    file was read at -p1, then -p0, never at its own level): it is named, as at -p1."""
    root, base = profiles_stack(tmp_path, monkeypatch, BELOW)
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported))
    env = quilt_env(tmp_path, exported, "")
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "-a")
    trees = tmp_path / "elsewhere" / "src"
    for side, content in (("old", (checkout / "a.py").read_bytes()),
                          ("new", (checkout / "a.py").read_bytes().replace(
                              b"line8 gfx942\n", b"line8 gfx942 and more\n"))):
        (trees / side).mkdir(parents=True)
        (trees / side / "a.py").write_bytes(content)
    made = subprocess.run(["diff", "-u", "src/old/a.py", "src/new/a.py"], cwd=trees.parent,
                          capture_output=True)
    assert made.returncode == 1, made
    incoming = tmp_path / "more.patch"
    incoming.write_bytes(b"Description: more\n\n" + made.stdout)
    quilt(checkout, env, "import", "-p2", str(incoming))
    quilt(checkout, env, "push")
    assert "more.patch -p2" in (exported / "series").read_text()
    err = refused_update(root, exported)
    lines = (exported / "more.patch").read_bytes().splitlines()
    section = next(n for n, line in enumerate(lines, 1) if line.startswith(b"--- src/old/a.py"))
    assert f"{exported / 'more.patch'}:{section}: more.patch (every profile): quilt's change " \
        "to a.py does not carry back onto the fix's own base: it meets lines that fix-942.patch " \
        "(gfx942) changed below it in quilt's tree" in err, err


def test_an_every_profile_fix_that_would_leave_a_profiles_series_is_refused(tmp_path,
                                                                           monkeypatch):
    """In the tree of `export --quilt --profile gfx950` (without fix-942), fix-all is changed
    on line9, next to fix-942's line8. On its own base it applies, so the update wrote it,
    exit 0, while fix-all no longer went into gfx942's series (status: conflict, overlays
    refused). Now refused as the overlays refuse it, naming the patch, the profile and the
    patch it meets, with quilt's series line; nothing written. The same change where the
    gfx942 fix comes after fix-all (whose base then holds it) names that fix, its profile and
    that quilt's tree lacks it, with the line of quilt's series that lists the change meeting
    it (fix-all's: the refusal named the series file and no line)."""
    root, base = profiles_stack(tmp_path, monkeypatch, (
        ("fix-942", b"line8\n", b"line8 gfx942\n", "gfx942"),
        ("fix-all", b"line12\n", b"line12 all\n", None)))
    exported, _, _ = changed_in_quilt(root, base, tmp_path, ["--profile", "gfx950"],
                                      b"line9\n", b"line9 all\n")
    err = refused_update(root, exported)
    assert f"{exported / 'series'}:1: fix-all.patch does not apply in the series of gfx942: " \
        "it changes lines of a.py that fix-942.patch (gfx942) changed before it there, after " \
        "the changes made in quilt" in err, err
    assert "quilt's tree, gfx950's series, does not hold fix-942.patch (gfx942)" in err
    assert ok(root, "status").rc == 0

    later = tmp_path / "later"
    later.mkdir()
    root, base = profiles_stack(later, monkeypatch, (
        ("fix-all", b"line12\n", b"line12 all\n", None),
        ("fix-942", b"line8\n", b"line8 gfx942\n", "gfx942")))
    exported, _, _ = changed_in_quilt(root, base, later, ["--profile", "gfx950"],
                                      b"line9\n", b"line9 all\n")
    err = refused_update(root, exported)
    assert f"{exported / 'series'}:1: fix-942.patch (profile gfx942, not in quilt's tree) " \
        "would no longer apply on its base after the changes made in quilt (quilt's change to " \
        "fix-all.patch, listed on this line)" in err, err


def test_an_export_of_another_profile_over_a_refreshed_patch_names_it_as_the_projects(
        tmp_path, monkeypatch):
    """`export --quilt DIR --profile gfx942`, fix-942 changed there with `quilt refresh`, then
    `export --quilt DIR --profile gfx950`, whose series leaves fix-942 out: refused (its change
    would be left unlisted), but called "a patch of no series here ... a directory of another
    quilt stack?", with only "export elsewhere, or move DIR/series away" for a way on. The
    export's record says it is this project's: the refusal says so, that it changed in DIR
    since the export, and names `import quilt DIR --update`, which takes the change back, after
    which the gfx950 export goes through."""
    root, base = profiles_stack(tmp_path, monkeypatch, (
        ("fix-all", b"line10\n", b"line10 all\n", None),
        ("fix-942", b"line8\n", b"line8 gfx942\n", "gfx942")))
    exported, checkout, _ = changed_in_quilt(root, base, tmp_path, ["--profile", "gfx942"],
                                             b"line20\n", b"line20 gfx942 too\n")
    before = untouched(root, exported)
    run = run_cli(root, "export", "--quilt", str(exported), "--profile", "gfx950")
    assert run.rc == 2, run.text
    assert f"{exported / 'series'}:2: lists fix-942.patch, this project's patch " \
        f"({root / 'series/up/fix-942.patch'}), changed in {exported} since patchforge " \
        "exported it (by quilt refresh, an editor?); the export of gfx950's series, which " \
        "does not hold it, would leave it unlisted there" in run.err, run.err
    assert f"`patchforge import quilt {exported} --update` takes it back into " \
        f"{root / 'series/up/fix-942.patch'}" in run.err
    assert "another quilt stack" not in run.err and "away" not in run.err
    assert untouched(root, exported) == before

    ok(root, "import", "quilt", str(exported), "--update")
    assert "+line20 gfx942 too\n" in patch_text(root, "fix-942.patch")
    ok(root, "export", "--quilt", str(exported), "--profile", "gfx950")
    assert (exported / "series").read_text() == "fix-all.patch\n"
    assert lint_errors(root) == []



def test_a_fix_renamed_after_the_export_and_changed_in_quilt_is_named_by_its_new_name(
        tmp_path, monkeypatch):
    """`export --quilt`, then `patchforge rename fix-a fix-z`, then fix-a.patch changed in
    quilt: the refusal said fix-a.patch "left the series (deleted, renamed, or landed)" and
    to give it a new name; following that, the change was refused as meeting lines "patches
    of another profile" changed, in a project without profiles (the lines were fix-z's: the
    same fix, in the series and not in quilt's tree). fix-z.patch's bytes are the ones the
    export wrote for fix-a.patch: the refusal says fix-a.patch is fix-z.patch now and to rename
    it alike in quilt, which takes the change back into fix-z; a quilt patch given another name
    (fix-a's header kept, as `quilt rename` keeps it) is said to be fix-z renamed and changed
    in quilt, with the `patchforge rename` that keeps the fix one, without a word of profiles
    (it was refused as meeting lines fix-z changed "in the series but not in quilt's tree")."""
    import shutil

    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path)
    for name, old, new in (("fix-a", b"line5\n", b"line5 a\n"),
                           ("fix-b", b"line15\n", b"line15 b\n")):
        ok(root, "new", name, "--file", "a.py", "-m", f"Fix {name}")
        work = root / ".patchforge/work/up/a.py"
        work.write_bytes(work.read_bytes().replace(old, new))
        ok(root, "refresh")
    exported, env, checkout = to_quilt(root, base, tmp_path)
    ok(root, "rename", "fix-a", "fix-z")
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line6\n", b"line6 quilt\n"))
    quilt(checkout, env, "refresh")
    kept = tmp_path / "q-kept"
    shutil.copytree(exported, kept)

    err = refused_update(root, exported)
    assert f"{exported / 'series'}:1: fix-a.patch is fix-z.patch now (renamed in the up " \
        "series after `export --quilt` wrote it)" in err, err
    assert f"rename it alike in quilt: fix-a.patch to fix-z.patch in {exported / 'series'} " \
        f"(line 1) and {exported / 'fix-a.patch'} to {exported / 'fix-z.patch'}" in err, err
    assert "left the up series" not in err

    # Another name in quilt: fix-a's header, which fix-z holds, says which fix it is.
    (exported / "fix-a.patch").rename(exported / "fix-a2.patch")
    series = exported / "series"
    series.write_text(series.read_text().replace("fix-a.patch\n", "fix-a2.patch\n"))
    err = refused_update(root, exported)
    assert f"{series}:1: fix-a2.patch is fix-z.patch renamed (`quilt rename`) and changed in " \
        "quilt" in err, err
    assert "`patchforge rename fix-z fix-a2`" in err, err
    assert "profile" not in err and "quilt delete" not in err, err

    # As the first refusal says: renamed alike in quilt, the change goes into fix-z.
    shutil.rmtree(exported)
    shutil.copytree(kept, exported)
    (exported / "fix-a.patch").rename(exported / "fix-z.patch")
    series.write_text(series.read_text().replace("fix-a.patch\n", "fix-z.patch\n"))
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-z.patch" in run.out, run.out
    fix_z = patch_text(root, "fix-z.patch")
    assert "+line5 a\n" in fix_z and "+line6 quilt\n" in fix_z, fix_z
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\n"
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def quilt_changed_fix_a(root: Path, base: str, tmp_path: Path) -> tuple[Path, Path]:
    """A stack kept in git, exported to quilt, fix-a changed there and `quilt refresh`ed:
    (DIR, the series' fix-a.patch)."""
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=T", "-c", "user.email=t@x", "commit", "-qm", "stack")
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line7\n", b"line7 from quilt\n"))
    quilt(checkout, env, "refresh")
    return exported, root / "series/up/fix-a.patch"


def test_an_import_undone_in_the_stack_leaves_quilts_change_quilts(stack, tmp_path):
    """quilt's change taken back, then the import undone in the stack (`git checkout --
    series`: a review of `git diff` that threw it away): the series does not hold quilt's
    change, so `export --quilt DIR` must not overwrite DIR's file with the older patch, and
    `import quilt DIR --update` must not say the series already holds it. The export is
    refused as any change made in quilt since the export, naming the way to keep it and to
    drop it; the import takes quilt's change back again, and the export then replaces DIR's
    file with the series' own."""
    root, base = stack
    exported, fix_a = quilt_changed_fix_a(root, base, tmp_path)
    quilts = (exported / "fix-a.patch").read_bytes()
    assert "updated up/fix-a.patch" in ok(root, "import", "quilt", str(exported), "--update").out
    assert b"+line7 from quilt\n" in fix_a.read_bytes()
    git(root, "checkout", "--", "series")
    older = fix_a.read_bytes()
    assert b"line7 from quilt" not in older

    run = run_cli(root, "export", "--quilt", str(exported))
    assert run.rc == 2, run.text
    assert f"{exported / 'fix-a.patch'}: holds quilt's change that `import quilt --update` " \
           f"took back, which {fix_a} no longer holds" in run.err, run.err
    assert f"`patchforge import quilt {exported} --update` takes it back" in run.err
    assert f"to drop it, remove {exported / 'fix-a.patch'}" in run.err
    assert (exported / "fix-a.patch").read_bytes() == quilts and fix_a.read_bytes() == older

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out and "nothing to take back" not in run.out
    assert b"+line7 from quilt\n" in fix_a.read_bytes()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "fix-a.patch").read_bytes() == fix_a.read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_patch_changed_after_the_import_is_kept_and_said(stack, tmp_path):
    """quilt's change taken back, then the series' fix-a changed again (`edit`, `refresh`):
    a second `import quilt DIR --update` keeps the series' newer version and says so (not
    that the series holds what quilt has), naming the way to take quilt's again; `export
    --quilt DIR` then writes the series' version over quilt's file, which the series took."""
    root, base = stack
    exported, fix_a = quilt_changed_fix_a(root, base, tmp_path)
    ok(root, "import", "quilt", str(exported), "--update")
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line9\n", b"line9 edited\n"))
    ok(root, "refresh")
    newer = fix_a.read_bytes()
    assert b"+line7 from quilt\n" in newer and b"+line9 edited\n" in newer

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert f"note: {exported / 'fix-a.patch'} is as an earlier `import quilt --update` took " \
           f"it back; {fix_a} changed since (edit, refresh?): the series' version is kept" \
        in run.err, run.err
    assert "`patchforge edit fix-a`" in run.err
    assert "the series already holds what quilt has" not in run.out
    assert "nothing taken back: the series' patches are newer than quilt's" in run.out
    assert fix_a.read_bytes() == newer
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "fix-a.patch").read_bytes() == newer
    assert "nothing to take back: the series already holds what quilt has" in \
        ok(root, "import", "quilt", str(exported), "--update").out


def in_git(root: Path) -> None:
    """The stack kept in git, as a team keeps it: an import can then be undone there."""
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=T", "-c", "user.email=t@x", "commit", "-qm", "stack")


def test_a_new_patch_whose_import_was_undone_is_never_lost(stack, tmp_path):
    """A patch made with `quilt new`, taken back, then the import undone in the stack (`git
    checkout -- series`, which leaves the new file there unlisted, or the file removed too).
    Before, the record counted quilt's file as the series' own from then on: the next import
    called it a fix the series had left ("not taken back") and said the series held what quilt
    has, and `export --quilt DIR` unlisted it in quilt's series without a word, so quilt's new
    fix was in neither. Now the export is refused, naming DIR/series' line and the way on (with
    the file left in series/up, naming that unlisted file, as every release command does), and
    the import takes it back again and says so; a patch the series deleted itself stays
    deleted."""
    root, base = stack
    in_git(root)
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "fix-c.patch", "pkg/new.py", b"new = 1\n")
    assert "added up/fix-c.patch" in ok(root, "import", "quilt", str(exported), "--update").out
    quilts = tree_bytes(exported)
    for undo in ("checkout", "checkout and remove"):
        git(root, "checkout", "--", "series")
        if undo == "checkout and remove":
            (root / "series/up/fix-c.patch").unlink()
        assert "fix-c" not in (root / "series/up/series").read_text()
        run = run_cli(root, "export", "--quilt", str(exported))
        assert run.rc == 2, run.text
        if undo == "checkout":
            # The file is still in series/up, unlisted: a release command refuses that first,
            # naming it (listed again, it is the fix the import took back).
            assert "series/up/fix-c.patch: not listed in series/up/series: nothing made " \
                   "from the series would carry this fix" in run.err, run.err
        else:
            assert f"{exported / 'series'}:4: lists fix-c.patch, which quilt made (`quilt " \
                   "new`) and `import quilt --update` took back into the up series, which " \
                   "no longer holds it" in run.err, run.err
            assert f"`patchforge import quilt {exported} --update` takes it back" in run.err
        assert tree_bytes(exported) == quilts
        run = ok(root, "import", "quilt", str(exported), "--update")
        assert "added up/fix-c.patch" in run.out, run.text
        assert f"note: {exported}/fix-c.patch was taken back by an earlier `import quilt " \
               "--update`, but the up series no longer holds it" in run.err, run.err
        assert (root / "series/up/series").read_text().split()[-1] == "fix-c.patch"
        assert b"+new = 1\n" in (root / "series/up/fix-c.patch").read_bytes()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_text().split()[-1] == "fix-c.patch"
    assert (exported / "fix-c.patch").read_bytes() == \
        (root / "series/up/fix-c.patch").read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []

    # Deleted by the series itself (kept under deleted/): its decision, not an undone import.
    checkout2 = checkout_of(tmp_path, base, "checkout2")
    quilt(checkout2, env, "push", "-a")
    quilt_new(checkout2, env, "fix-e.patch", "pkg/e.py", b"e = 1\n")
    ok(root, "import", "quilt", str(exported), "--update")
    ok(root, "delete", "fix-e")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "note: fix-e.patch left the up series after the export and is unchanged in quilt" \
        in run.err, run.text
    assert "fix-e" not in (root / "series/up/series").read_text()


def test_an_undone_import_then_an_edit_loses_neither_change(stack, tmp_path):
    """quilt's change to fix-a taken back, the import undone in the stack, then fix-a changed
    in the series (`edit`, `refresh`) without quilt's change. Before, the record still vouched
    for quilt's file as taken (the series' patch had changed "since"): the import said the
    series' version was newer and kept it, and `export --quilt` overwrote quilt's file, so
    quilt's change was gone from both. Now the import is refused, naming DIR/series' line and
    both files, and the export refuses to overwrite; once the series' patch holds both
    changes, the import keeps it and says so, and the export writes it over quilt's file."""
    root, base = stack
    exported, fix_a = quilt_changed_fix_a(root, base, tmp_path)
    ok(root, "import", "quilt", str(exported), "--update")
    quilts = tree_bytes(exported)
    git(root, "checkout", "--", "series")
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line9\n", b"line9 edited\n"))
    ok(root, "refresh")
    mine = fix_a.read_bytes()
    assert b"+line9 edited\n" in mine and b"line7 from quilt" not in mine

    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert f"{exported / 'series'}:1: fix-a.patch: quilt's change, which an earlier `import " \
           "quilt --update` took back, is not in the up series' patch, which changed since " \
           "without it" in run.err, run.err
    assert f"compare {exported / 'fix-a.patch'} with {fix_a}" in run.err
    assert tree_bytes(root / "series") == before
    run = run_cli(root, "export", "--quilt", str(exported))
    assert run.rc == 2, run.text
    assert f"{exported / 'fix-a.patch'}: holds quilt's change that `import quilt --update` " \
           f"took back, which {fix_a} no longer holds" in run.err, run.err
    assert tree_bytes(exported) == quilts and tree_bytes(root / "series") == before

    ok(root, "edit", "fix-a")
    work.write_bytes(work.read_bytes().replace(b"line7\n", b"line7 from quilt\n"))
    ok(root, "refresh")
    both = fix_a.read_bytes()
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing taken back: the series' patches are newer than quilt's" in run.out, run.text
    assert fix_a.read_bytes() == both
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "fix-a.patch").read_bytes() == both
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def worked_on_in_quilt(stack, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The stack moved under tmp_path/prepared (to be copied for each kill), exported to
    prepared/q, fix-a's line7 changed there and `quilt refresh`ed, fix-c made with `quilt
    new`: (prepared, the project, DIR)."""
    root, base = stack
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    root = root.rename(prepared / "project")
    exported = prepared / "q"
    ok(root, "export", "--quilt", str(exported))
    env = quilt_env(tmp_path, exported, "")
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line7\n", b"line7 from quilt\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "fix-c.patch", "pkg/new.py", b"new = 1\n")
    return prepared, root, exported


@pytest.mark.parametrize("then", ["export", "edit"])
def test_a_killed_import_then_another_command_loses_neither_sides_change(stack, tmp_path, then):
    """`import quilt --update` (fix-a refreshed in quilt, fix-c made with `quilt new`) killed
    (kill -9, PATCHFORGE_FAULT) at each file it lands, between a patch file and the record
    that vouches for it, and the next command is not the same import again: `export --quilt
    DIR`, or an `edit` + `refresh` of fix-a (the kill unseen) then the import and the export.
    Before, an import killed after it recorded quilt's fix-a, before it wrote it, then fix-a
    edited, had the next import keep the series' fix-a as "newer" and the export overwrite
    quilt's file: quilt's change was in neither. Now each command either finishes with both
    sides' changes or is refused, exit 2, naming the file, nothing written; and the import run
    again in the end finishes it."""
    import shutil

    from helpers.cli import run_subprocess

    prepared, root, exported = worked_on_in_quilt(stack, tmp_path)
    quilt_files = {n: (exported / n).read_bytes() for n in ("fix-a.patch", "fix-c.patch")}

    def holds_quilts(project: Path, q: Path) -> None:
        """Each change made in quilt is in the series, or still in DIR as quilt wrote it and
        listed there."""
        listed = (q / "series").read_text().split()
        fix_a = (project / "series/up/fix-a.patch").read_bytes()
        assert b"+line7 from quilt\n" in fix_a or (
            (q / "fix-a.patch").read_bytes() == quilt_files["fix-a.patch"]
            and "fix-a.patch" in listed), fix_a
        assert "fix-c.patch" in (project / "series/up/series").read_text().split() or (
            (q / "fix-c.patch").read_bytes() == quilt_files["fix-c.patch"]
            and "fix-c.patch" in listed)

    def refused_or_done(run, project: Path, q: Path, before: tuple) -> None:
        if run.rc == 2:
            assert "nothing was" in run.err, run.err
            assert (tree_bytes(project / "series"), tree_bytes(q)) == before, run.err
        else:
            assert run.rc == 0, run.text
        holds_quilts(project, q)

    hits = 0
    for n in range(1, 40):
        project, q = (tmp_path / f"run-{n}" / "project"), (tmp_path / f"run-{n}" / "q")
        shutil.copytree(prepared, tmp_path / f"run-{n}", symlinks=True)
        proc = run_subprocess(project, "import", "quilt", str(q), "--update",
                              env={"PATCHFORGE_FAULT": f"rename:{n}"})
        if proc.returncode == 0:
            break
        hits += 1
        assert proc.returncode == 137, proc.stderr.decode()
        holds_quilts(project, q)
        if then == "edit":
            ok(project, "edit", "fix-a")
            work = project / ".patchforge/work/up/a.py"
            work.write_bytes(work.read_bytes().replace(b"line9\n", b"line9 edited\n"))
            ok(project, "refresh")
            before = (tree_bytes(project / "series"), tree_bytes(q))
            run = run_cli(project, "import", "quilt", str(q), "--update")
            refused_or_done(run, project, q, before)
            assert b"+line9 edited\n" in (project / "series/up/fix-a.patch").read_bytes()
        before = (tree_bytes(project / "series"), tree_bytes(q))
        run = run_cli(project, "export", "--quilt", str(q))
        refused_or_done(run, project, q, before)
        if then == "export":
            again = run_cli(project, "import", "quilt", str(q), "--update")
            assert again.rc == 0, (n, again.text)
            fix_a = (project / "series/up/fix-a.patch").read_bytes()
            assert b"+line7 from quilt\n" in fix_a and b"+new = 1\n" in \
                (project / "series/up/fix-c.patch").read_bytes(), n
    else:
        pytest.fail("the fault never stopped firing")
    assert hits >= 3


def test_a_killed_export_after_an_import_loses_nothing(stack, tmp_path):
    """quilt's fix-a change and its `quilt new` fix-c taken back, then `export --quilt DIR`
    killed at each file it lands (a patch file written, the record not yet): the next `import
    quilt --update` finds the series holds everything (nothing taken, nothing refused), and
    the export run again gives what an uncut export gives."""
    import shutil

    from helpers.cli import run_subprocess

    prepared, root, exported = worked_on_in_quilt(stack, tmp_path)
    ok(root, "import", "quilt", str(exported), "--update")
    series = tree_bytes(root / "series")
    shutil.copytree(prepared, tmp_path / "clean", symlinks=True)
    ok(tmp_path / "clean/project", "export", "--quilt", str(tmp_path / "clean/q"))
    clean = tree_bytes(tmp_path / "clean/q")
    for n in range(1, 20):
        shutil.copytree(prepared, tmp_path / f"run-{n}", symlinks=True)
        project, q = tmp_path / f"run-{n}/project", tmp_path / f"run-{n}/q"
        proc = run_subprocess(project, "export", "--quilt", str(q),
                              env={"PATCHFORGE_FAULT": f"rename:{n}"})
        if proc.returncode == 0:
            break
        assert proc.returncode == 137, proc.stderr.decode()
        run = ok(project, "import", "quilt", str(q), "--update")
        assert "nothing to take back" in run.out, (n, run.text)
        assert tree_bytes(project / "series") == series, n
        ok(project, "export", "--quilt", str(q))
        assert {k: v for k, v in tree_bytes(q).items() if not k.endswith(".tmp")} == clean, n
    else:
        pytest.fail("the fault never stopped firing")
    assert n > 3


def test_a_move_made_in_the_stack_since_the_export_is_kept(stack, tmp_path):
    """The export wrote fix-a fix-b fix-d; the stack then moved fix-d first, and quilt only
    refreshed fix-a and added fix-c on it (`quilt new`), its series order otherwise as the
    export wrote it. Taken back, the stack's order stands (quilt never reordered), quilt's
    change comes in and fix-c joins after fix-a, where quilt put it. When both sides
    reordered, differently, nothing is taken back (exit 2, naming DIR/series). A record an
    earlier version wrote (no order in it) takes quilt's order, as before."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    ok(root, "move", "fix-d", "--first")
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line3 fixed\n", b"line3 fixed twice\n"))
    quilt(checkout, env, "refresh")
    quilt_new(checkout, env, "fix-c.patch", "pkg/new.py", b"new = 1\n")
    assert (exported / "series").read_text() == \
        "fix-a.patch\nfix-c.patch\nfix-b.patch\nfix-d.patch\n"
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    assert "reordered" not in run.out, run.out
    assert (root / "series/up/series").read_text() == \
        "fix-d.patch\nfix-a.patch\nfix-c.patch\nfix-b.patch\n"
    assert "+line3 fixed twice" in patch_text(root, "fix-a.patch")
    assert ok(root, "status").rc == 0 and lint_errors(root) == []

    # Running it again changes nothing: the stack's order still stands.
    ok(root, "import", "quilt", str(exported), "--update")
    assert (root / "series/up/series").read_text() == \
        "fix-d.patch\nfix-a.patch\nfix-c.patch\nfix-b.patch\n"

    # quilt now reorders too, differently: refused, nothing written.
    (exported / "series").write_text("fix-b.patch\nfix-a.patch\nfix-c.patch\nfix-d.patch\n")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert f"{exported / 'series'}: both sides reordered the up series" in run.err, run.err
    assert "nothing was taken back" in run.err, run.err
    assert tree_bytes(root / "series") == before

    # A record without the order (an earlier version's export): quilt's order, as before.
    record = exported / ".patchforge-export"
    earlier = json.loads(record.read_text())
    assert earlier.pop("order") == ["fix-a.patch", "fix-c.patch", "fix-b.patch", "fix-d.patch"]
    record.write_text(json.dumps(earlier))
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "reordered up's series" in run.out, run.text
    assert (root / "series/up/series").read_text() == \
        "fix-b.patch\nfix-a.patch\nfix-c.patch\nfix-d.patch\n"


def test_a_stack_holding_a_name_new_patches_may_not_take_goes_round_the_trip(tmp_path):
    """A stack made before names Windows cannot write were refused holds `aux.patch`: its
    own export to quilt and `import quilt --update` were refused whole ("cannot be checked
    out on Windows ... nothing was taken back"). The series' own names are read as the series
    reads them; a patch `quilt new` makes is held to what a new name must be."""
    from helpers.project import OneUpstreamStack

    text = b"".join(f"def a{i}():\n    return {i}\n\n".encode() for i in range(12))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": text})
    stack.add_fix("aux", "pkg/a.py", text, text.replace(b"return 3\n", b"return -3\n"))
    out = tmp_path / "q"
    stack.cli("export", "--quilt", str(out))
    _, said, _ = stack.cli("import", "quilt", str(out), "--update")
    assert "nothing" in said, said
    (out / "series").write_bytes((out / "series").read_bytes() + b"con.patch\n")
    (out / "con.patch").write_bytes((out / "aux.patch").read_bytes())
    _, _, err = stack.cli("import", "quilt", str(out), "--update", expect=2)
    assert "con.patch" in err and "Windows" in err, err


def pushed_into_the_twin(tmp_path: Path, quiltrc: str = "") -> tuple[Path, Path, dict, Path]:
    """No profiles: p1 changes the file's first line, p2 a line of scale_b, whose context is
    the same in its twin scale_a. Exported; in quilt (set up by `quiltrc`), p1 gains 20 lines
    above both functions and is refreshed; `quilt push -a` then applies p2 at the offset
    nearest its old lines: in scale_a. (root, DIR, quilt's environment, quilt's tree)."""
    need_tool("quilt")
    body = b"".join(b"    y = y %s %d\n" % (op, n) for op, n in
                    ((b"+", 1), (b"-", 3), (b"*", 5), (b"+", 7), (b"-", 9), (b"*", 11)))
    k = (b"MODE = 1\n\n\ndef scale_a(x):\n    y = x * 2\n" + body + b"    return y\n"
         b"\n\ndef scale_b(x):\n    y = x * 2\n" + body + b"    return y\n")
    root, base = git_project(tmp_path, {"pkg/k.py": k})
    p1 = k.replace(b"MODE = 1\n", b"MODE = 2\n")
    i = p1.index(b"def scale_b")
    p2 = p1[:i] + p1[i:].replace(b"y = y + 7\n", b"y = y + 70\n", 1)
    for name, content in (("p1", p1), ("p2", p2)):
        overlay = tmp_path / f"{name}.overlay"
        overlay.write_bytes(content)
        ok(root, "import", "overlay", str(overlay), "--path", "pkg/k.py", "--name", name,
           "-m", name)
    exported, _, checkout = to_quilt(root, base, tmp_path)
    env = quilt_env(tmp_path, exported, quiltrc)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "pop", "p1.patch")
    k_py = checkout / "pkg/k.py"
    lines = k_py.read_bytes().split(b"\n")
    k_py.write_bytes(b"\n".join(lines[:1] + [b"OPT_%d = %d" % (n, n) for n in range(1, 21)]
                                + lines[1:]))
    quilt(checkout, env, "refresh")
    pushed = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert b"offset" in pushed.stdout, pushed.stdout  # quilt took the nearest: scale_a
    assert fixed_in(k_py.read_bytes()) == "a"
    return root, exported, env, checkout


def fixed_in(content: bytes) -> str:
    """Which of scale_a and scale_b has p2's `y = y + 70`: "a", "b", "both" or "none"."""
    a, b = content.split(b"def scale_b")
    found = [name for name, part in (("a", a), ("b", b)) if b"y + 70\n" in part]
    return "both" if len(found) == 2 else (found[0] if found else "none")


def test_a_later_fix_quilt_pushed_into_a_twin_is_not_made_again_there(tmp_path, monkeypatch):
    """`import quilt --update` made p2, which quilt pushed into scale_a, again there ("its
    lines moved: diff made again, change kept"): the fix became scale_a's with status and
    lint quiet. A patch quilt did not change whose lines match at several places is left as
    it is: status and lint say the place is ambiguous (as after patchforge's own `refresh` of
    p1), and the overlay never has the fix in scale_a without a word. The import left it so
    saying nothing, exit 0, the user believing the update took; it now warns, naming the
    patch and both places, and exits 1."""
    root, exported, _, _ = pushed_into_the_twin(tmp_path)
    p2_before = (root / "series/up/p2.patch").read_bytes()
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 1, run.text
    assert "warning: up/p2.patch left as it is: its lines moved, and the place of its change " \
        "is ambiguous in the new series (pkg/k.py hunk #1: its context is at lines 26, 37, " \
        "line 26 the nearest to its header's, where `quilt push` puts it)" in run.err, run.err
    assert "updated up/p1.patch" in run.out
    assert (root / "series/up/p2.patch").read_bytes() == p2_before
    status = run_cli(root, "status")
    assert status.rc == 1 and "ambiguous" in status.out + status.err, status.text
    assert any("p2.patch" in e and "ambiguous" in e for e in lint_errors(root)), lint_errors(root)


@pytest.mark.parametrize("quiltrc", sorted(QUILTRCS))
def test_a_twin_fix_refreshed_where_quilt_pushed_it_is_never_taken_into_the_twin(
        tmp_path, monkeypatch, quiltrc):
    """After the push into scale_a, `quilt refresh` of p2 (the whole stack refreshed, as
    people do): quilt's p2 makes the series' change in scale_a. `import quilt --update` took
    it back, "updated up/p2.patch", exit 0, and the series' fix was scale_a's with status and
    lint clean. The series' place on the new base was found by nearness too (the copy quilt
    took), so the change did not count as moved. Now the series' place is carried from its
    own base by the line map: quilt's change is elsewhere, refused, nothing taken back."""
    root, exported, env, checkout = pushed_into_the_twin(tmp_path, QUILTRCS[quiltrc])
    quilt(checkout, env, "refresh")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert "p2.patch: quilt's patch makes the series' change to pkg/k.py in another place " \
        "than the series' patch has it" in run.err and "nothing was taken back" in run.err, \
        run.err
    assert tree_bytes(root / "series") == before


def test_a_twin_fix_edited_where_quilt_pushed_it_is_never_taken_into_the_twin(tmp_path,
                                                                               monkeypatch):
    """After the push into scale_a, the fix edited there (+70 made +71) and refreshed: its
    changed lines are no longer the series', so the check for a change that only moved did not
    ask, and `import quilt --update` took it back, "updated up/p2.patch", the fix scale_a's.
    Now a change of its own that meets none of the series' lines, where the series' place is
    one of several, is refused, naming both places, nothing taken back."""
    root, exported, env, checkout = pushed_into_the_twin(tmp_path)
    k_py = checkout / "pkg/k.py"
    k_py.write_bytes(k_py.read_bytes().replace(b"y = y + 70\n", b"y = y + 71\n"))
    quilt(checkout, env, "refresh")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert "p2.patch: quilt's patch changes pkg/k.py at line 29 of its base, none of the lines " \
        "the series' patch changes (line 40)" in run.err and "nothing was taken back" \
        in run.err, run.err
    assert tree_bytes(root / "series") == before


@pytest.mark.parametrize("quiltrc", sorted(QUILTRCS))
def test_a_twin_fix_put_back_in_its_place_in_quilt_is_taken_back_there(tmp_path, monkeypatch,
                                                                         quiltrc):
    """After the push into scale_a, the place tuned in quilt: p2's change moved back into
    scale_b (where the series has it) and refreshed. `import quilt --update` refused it as
    "in another place than the series' patch has it", nothing taken back: the series' place
    was what nearness gives on the new base, scale_a. Now p1 and p2 come back, p2 in scale_b
    with quilt's bytes of the fix, quilt's tree is the overlay, status and lint are clean."""
    root, exported, env, checkout = pushed_into_the_twin(tmp_path, QUILTRCS[quiltrc])
    k_py = checkout / "pkg/k.py"
    a, b = k_py.read_bytes().split(b"def scale_b")
    k_py.write_bytes(a.replace(b"y = y + 70\n", b"y = y + 7\n") + b"def scale_b"
                     + b.replace(b"y = y + 7\n", b"y = y + 70\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/p1.patch\n" in run.out and "updated up/p2.patch\n" in run.out, run.text
    p2 = patch_text(root, "p2.patch")
    assert "@@ -37,7 +37,7 @@ def scale_b(x):\n" in p2 and \
        "-    y = y + 7\n+    y = y + 70\n" in p2, p2
    ok(root, "overlays")
    assert (root / "overlays/up/pkg/k.py").read_bytes() == k_py.read_bytes()
    assert fixed_in(k_py.read_bytes()) == "b"
    assert run_cli(root, "status").rc == 0
    assert lint_errors(root) == []


TWIN_BODY = b"".join(b"    y = %s\n" % s for s in (b"x * 2", b"y + 1", b"y - 3", b"y * 5",
                                                    b"y + 7", b"y - 9", b"y * 11")) + \
    b"    return y\n"
TWIN_FILE = b"# header\n\n\ndef scale_a(x):\n" + TWIN_BODY + b"\n\ndef scale_b(x):\n" + TWIN_BODY


def in_function(content: bytes, function: bytes, old: bytes, new: bytes) -> bytes:
    """`content` with `old` made `new` in `function` only (its twin left alone)."""
    head, _, tail = content.partition(b"def " + function)
    return head + b"def " + function + tail.replace(old, new, 1)


# quilt set up as its users set it: the refresh and diff options they keep in a quiltrc
# (QUILTRCS has quilt's own defaults and `-p ab` with function context).
TWIN_QUILTRCS = {
    "one-line-context": 'QUILT_DIFF_OPTS="-U1"\nQUILT_REFRESH_ARGS="-p ab --no-timestamps"\n',
    "diff-args": 'QUILT_DIFF_ARGS="-p ab --no-timestamps --color=never"\n'
                 'QUILT_DIFF_OPTS="--show-c-function"\n'
                 'QUILT_REFRESH_ARGS="-p ab --no-index --diffstat"\n',
}


@pytest.mark.parametrize("quiltrc", sorted(TWIN_QUILTRCS))
def test_a_round_trip_keeps_each_twin_fix_in_its_own_function(tmp_path, monkeypatch, quiltrc):
    """Two fixes whose context is in both twins: pa changes scale_a's `y - 9`, pb scale_b's
    `y + 7`. Exported, pushed with the real quilt, each fix tuned in quilt (-90 to -91 in
    scale_a, +70 to +71 in scale_b) and refreshed with the options quilt users set (`-p ab`,
    no index, one line of context, function context, a diffstat), then taken back with
    `import quilt --update`: each patch's change stays in its own function with quilt's
    bytes of the fix, quilt's tree is the overlay, and status and lint are clean (with one
    line of context the hunk's context is in both twins at every place: its place is its
    line numbers, quilt's tree's, alone)."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, {"pkg/k.py": TWIN_FILE})
    work = root / ".patchforge/work/up/pkg/k.py"
    for name, function, old, new in (("pa", b"scale_a", b"y = y - 9\n", b"y = y - 90\n"),
                                     ("pb", b"scale_b", b"y = y + 7\n", b"y = y + 70\n")):
        ok(root, "new", name, "--file", "pkg/k.py", "-m", name)
        work.write_bytes(in_function(work.read_bytes(), function, old, new))
        ok(root, "refresh")
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported))
    env = quilt_env(tmp_path, exported, TWIN_QUILTRCS[quiltrc])
    checkout = checkout_of(tmp_path, base)
    k = checkout / "pkg/k.py"
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "pop", "pa.patch")
    k.write_bytes(in_function(k.read_bytes(), b"scale_a", b"y = y - 90\n", b"y = y - 91\n"))
    quilt(checkout, env, "refresh")
    pushed = quilt(checkout, env, "push", "-a")
    assert "offset" not in pushed and "fuzz" not in pushed, pushed
    k.write_bytes(in_function(k.read_bytes(), b"scale_b", b"y = y + 70\n", b"y = y + 71\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/pa.patch" in run.out and "updated up/pb.patch" in run.out, run.text
    pa, pb = (patch_text(root, f"{n}.patch") for n in ("pa", "pb"))
    for text, change in ((pa, "-    y = y - 9\n+    y = y - 91\n"),
                         (pb, "-    y = y + 7\n+    y = y + 71\n")):
        lines = text.split("\n@@", 1)[1].splitlines(keepends=True)
        assert "".join(line for line in lines if line[:1] in "+-") == change, text
    ok(root, "overlays")
    overlay = (root / "overlays/up/pkg/k.py").read_bytes()
    assert overlay == k.read_bytes()
    a_part, b_part = overlay.split(b"def scale_b")
    assert b"y - 91\n" in a_part and b"y + 7\n" in a_part and b"y + 71" not in a_part
    assert b"y + 71\n" in b_part and b"y - 9\n" in b_part and b"y - 91" not in b_part
    assert run_cli(root, "status").rc == 0
    assert lint_errors(root) == []


@pytest.mark.parametrize("how", ["refresh -p0", "QUILT_REFRESH_ARGS=-p0"])
def test_a_patch_quilt_refreshed_at_p0_comes_back(stack, tmp_path, how):
    """`quilt refresh -p0` (or a quiltrc's `QUILT_REFRESH_ARGS=-p0`) lists the patch as
    `fix-a.patch -p0` and writes its names from the tree's root, the old one `a.py.orig`.
    Before, `import quilt --update` refused the entry ("listed with -p0: patchforge patches
    are -p1"), the change quilt made not taken back. Now it is read at -p0: the edit is in
    the series' patch, which is -p1 with git's diff, the new patch `quilt new` made at -p0
    joins, overlays hold quilt's tree, and an export after it is quilt's again."""
    root, base = stack
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported))
    env = quilt_env(tmp_path, exported, 'QUILT_REFRESH_ARGS="-p0"\n'
                    if how.startswith("QUILT") else "")
    refresh = ["refresh"] if how.startswith("QUILT") else ["refresh", "-p0"]
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "pop", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line1\n", b"line1\nadded one\n"))
    quilt(checkout, env, *refresh)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "new", "fix-c.patch")
    quilt(checkout, env, "add", "pkg/new.py")
    (checkout / "pkg/new.py").write_bytes(b"new = 1\n")
    quilt(checkout, env, *refresh)
    assert (exported / "series").read_text() == \
        "fix-a.patch -p0\nfix-b.patch\nfix-d.patch\nfix-c.patch -p0\n"
    assert "\n--- a.py.orig\t" in (exported / "fix-a.patch").read_text()

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch\n" in run.out and "added up/fix-c.patch\n" in run.out, run.out
    fix_a = patch_text(root, "fix-a.patch")
    assert "diff --git a/a.py b/a.py\n" in fix_a and "+added one\n" in fix_a \
        and "+line3 fixed\n" in fix_a and ".orig" not in fix_a
    assert "diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n" in \
        patch_text(root, "fix-c.patch")
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    ok(root, "overlays")
    assert tree_bytes(root / "overlays" / "gfx942" / "up") == \
        {p: (checkout / p).read_bytes() for p in ("a.py", "pkg/b.py", "pkg/new.py")}
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_text() == \
        "fix-a.patch\nfix-b.patch\nfix-d.patch\nfix-c.patch\n"
    quilt(checkout, env, "pop", "-a")
    quilt(checkout, env, "push", "-a")
    assert a.read_bytes() == tree_bytes(root / "overlays" / "gfx942" / "up")["a.py"]


def test_a_quilt_series_option_patchforge_cannot_read_is_refused_naming_the_line(tmp_path):
    """`-R` (quilt applies the patch reversed) and `-pab` (a refresh option, never an
    entry's) are refused naming the series file and line; nothing is imported. A -p0 entry
    of another tool (`diff -u a.py.orig a.py`) is read as quilt's."""
    root, base = git_project(tmp_path)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "fix.patch").write_bytes(
        b"--- a.py.orig\n+++ a.py\n@@ -2,3 +2,3 @@\n line2\n-line3\n+line3 fixed\n line4\n")
    for option, said in (("-R", "patch 'fix.patch' is listed with -R: quilt applies it "
                                "reversed"), ("-pab", "unsupported series option '-pab'")):
        (incoming / "series").write_text(f"# from elsewhere\nfix.patch {option}\n")
        run = run_cli(root, "import", "quilt", str(incoming))
        assert run.rc == 2 and f"{incoming / 'series'}:2: {said}" in run.err, run.err
        assert not (root / "series/up/fix.patch").exists()
    (incoming / "series").write_text("fix.patch -p0\n")
    ok(root, "import", "quilt", str(incoming))
    assert ok(root, "status").rc == 0
    ok(root, "overlays")
    assert (root / "overlays/up/a.py").read_bytes() == \
        A.replace(b"line3\n", b"line3 fixed\n")


def test_series_options_quilt_applies_are_read_as_quilt_applies_them_or_refused(tmp_path):
    """quilt passes an entry's options to GNU patch as written: `fix.patch -p 1` (two words)
    is applied at level 1 by `quilt push`, and was refused by `import quilt` ("unsupported
    series option '-p'") and in a project's own series ("listed with -p"); it is read at that
    level, the overlay what `quilt push -a` gives. `-R` (`-Rp1` alike) is applied reversed
    by quilt; patchforge reads every patch forward, so it is refused naming the line, with
    the way on (`quilt refresh` writes it forward and drops -R), after which the import
    gives quilt's tree, never the fix the other way round."""
    need_tool("quilt")
    root, base = git_project(tmp_path)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "fix.patch").write_bytes(
        b"--- a/a.py\n+++ b/a.py\n@@ -2,3 +2,3 @@\n line2\n-line3\n+line3 fixed\n line4\n")
    (incoming / "old.patch").write_bytes(
        b"--- a.py.orig\n+++ a.py\n@@ -9,3 +9,3 @@\n line9\n-line10\n+line10 fixed\n line11\n")
    # Reversed: the file has the fix as its old side (quilt applies it with -R).
    (incoming / "back.patch").write_bytes(
        b"--- a/a.py\n+++ b/a.py\n@@ -15,3 +15,3 @@\n line15\n-line16 fixed\n+line16\n line17\n")
    env = quilt_env(tmp_path, incoming, "")
    pristine = checkout_of(tmp_path, base, "pristine")

    def pushed(series: str) -> bytes:
        (incoming / "series").write_text(series)
        checkout = tmp_path / f"checkout-{len(list(tmp_path.glob('checkout-*')))}"
        shutil.copytree(pristine, checkout)
        quilt(checkout, env, "push", "-a")
        return (checkout / "a.py").read_bytes()

    spaced = pushed("fix.patch -p 1\nold.patch -p 0\n")
    assert spaced == A.replace(b"line3\n", b"line3 fixed\n").replace(b"line10\n",
                                                                      b"line10 fixed\n")
    ok(root, "import", "quilt", str(incoming))
    ok(root, "overlays")
    assert (root / "overlays/up/a.py").read_bytes() == spaced
    # The project's own series, read by quilt as it is (QUILT_PATCHES=series/up).
    series = root / "series/up/series"
    series.write_text(series.read_text().replace("fix.patch\n", "fix.patch -p 1\n"))
    assert "fix.patch -p 1\n" in series.read_text()
    ok(root, "overlays", "--check")
    assert ok(root, "status").rc == 0
    # A project's own entry with -R: refused by every command reading the series.
    listed = series.read_text()
    series.write_text(listed.replace("fix.patch -p 1\n", "fix.patch -R\n"))
    for args in (("overlays",), ("status",)):
        run = run_cli(root, *args)
        assert run.rc == 2 and f"{series}:1: patch 'fix.patch' is listed with -R: quilt " \
            "applies it reversed" in run.err, (args, run.err)
    series.write_text(listed)
    # Reversed in quilt's directory: quilt applies back.patch the other way round.
    for option in ("-R", "-Rp1", "-p1 -R"):
        quilts = pushed(f"back.patch {option}\n")
        assert quilts == A.replace(b"line16\n", b"line16 fixed\n"), option
        made, _ = git_project(tmp_path / f"other-{option.replace(' ', '')}")
        run = run_cli(made, "import", "quilt", str(incoming))
        assert run.rc == 2, run.text
        assert f"{incoming / 'series'}:1: patch 'back.patch' is listed with " \
            f"{option.split()[-1]}: quilt applies it reversed" in run.err, run.err
        assert "`quilt push` up to it and `quilt refresh`" in run.err, run.err
        assert not (made / "series/up/back.patch").exists()
    # The way on the refusal names: quilt writes it forward, and the import gives quilt's tree.
    checkout = tmp_path / "refreshed"
    shutil.copytree(pristine, checkout)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "refresh")
    assert (incoming / "series").read_text() == "back.patch\n"
    made, _ = git_project(tmp_path / "forward")
    ok(made, "import", "quilt", str(incoming))
    ok(made, "overlays")
    assert (made / "overlays/up/a.py").read_bytes() == quilts == (checkout / "a.py").read_bytes()


def test_a_p0_patchs_hunk_lines_that_read_like_file_headers_are_kept():
    """A removed line `-- x` and an added `++ y` read `--- x` / `+++ y` in the diff: only the
    file headers are renamed, the hunks are copied by their counts; a quoted name is cut
    inside its quotes; a name with fewer directories than the level is refused, naming it."""
    from patchforge.apply.gnupatch import with_p1_names
    from patchforge.errors import InputError

    hunk = b"@@ -1,2 +1,2 @@\n--- x\n+++ y\n context\n"
    data = (b"Description: d\n\n--- sql/q.sql.orig\t2024-05-01\n+++ sql/q.sql\t2024-05-01\n"
            + hunk + b"--- \"my dir/f.py\"\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n")
    assert with_p1_names(data, 0, "q.patch") == (
        b"Description: d\n\n--- a/sql/q.sql\t2024-05-01\n+++ b/sql/q.sql\t2024-05-01\n"
        + hunk + b"--- \"a/my dir/f.py\"\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n")
    assert with_p1_names(data, 1, "q.patch") is data
    with pytest.raises(InputError) as refused:
        with_p1_names(data, 2, "q.patch")
    assert refused.value.line == 3 and "cannot strip 2 directories from 'sql/q.sql.orig'" \
        in refused.value.message


def test_a_second_change_in_quilt_after_an_import_comes_back(stack, tmp_path):
    """quilt's change to fix-a taken back (`import quilt DIR --update`), then a second change
    to fix-a in quilt (the same tree, `quilt refresh` again) and a second import: it was
    refused as "changed in quilt and in the series since `export --quilt` wrote it", the
    series' change being the first import itself; the hint (make one hold both) had nothing
    to do, since quilt's file held both already. The second change comes back, and so does
    a third after a `quilt new` patch's second change."""
    root, base = stack
    exported, fix_a = quilt_changed_fix_a(root, base, tmp_path)
    env = quilt_env(tmp_path, exported, "")
    checkout = tmp_path / "checkout"
    assert "updated up/fix-a.patch" in ok(root, "import", "quilt", str(exported), "--update").out
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line9\n", b"line9 from quilt again\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    data = fix_a.read_bytes()
    assert b"+line7 from quilt\n" in data and b"+line9 from quilt again\n" in data, data
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "fix-c.patch", "pkg/new.py", b"new = 1\n")
    assert "added up/fix-c.patch" in ok(root, "import", "quilt", str(exported), "--update").out
    (checkout / "pkg/new.py").write_bytes(b"new = 2\n")
    quilt(checkout, env, "refresh")
    assert "updated up/fix-c.patch" in ok(root, "import", "quilt", str(exported), "--update").out
    assert b"+new = 2\n" in (root / "series/up/fix-c.patch").read_bytes()
    assert "nothing to take back: the series already holds what quilt has" in \
        ok(root, "import", "quilt", str(exported), "--update").out
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "fix-a.patch").read_bytes() == fix_a.read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_quilt_series_changing_a_file_empty_at_the_pin_imports_as_that_change(tmp_path,
                                                                              monkeypatch):
    """A quilt series made on the upstream (not an export) whose fix writes a line into an
    empty upstream file (pkg/__init__.py): quilt writes the empty old file as `--- /dev/null`,
    which `quilt push` (GNU patch) applies to the empty file. Plain `import quilt` refused it
    ("creates pkg/__init__.py, which the upstream already has"), exit 2: the series could not
    come in at all. It is imported as the change of that empty file, the series applies and
    its overlay holds quilt's file, and it goes back to quilt and comes back as it is."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, {**UPSTREAM_FILES, "pkg/__init__.py": b""})
    made = tmp_path / "made"
    made.mkdir()
    env = quilt_env(tmp_path, made, "")
    checkout = checkout_of(tmp_path, base, "quilt-tree")
    quilt_new(checkout, env, "init.patch", "pkg/__init__.py", b"from .b import x\n")
    quilt_new(checkout, env, "more.patch", "pkg/__init__.py", b"from .b import x\nY = 2\n")
    assert "--- /dev/null" in (made / "init.patch").read_text()  # as quilt writes it
    run = ok(root, "import", "quilt", str(made))
    assert "init.patch" in run.out and "more.patch" in run.out, run.text
    text = patch_text(root, "init.patch")
    assert "--- a/pkg/__init__.py" in text and "+from .b import x" in text, text
    assert "/dev/null" not in text and "new file" not in text, text
    assert ok(root, "status").rc == 0
    ok(root, "overlays")
    assert (root / "overlays/up/pkg/__init__.py").read_bytes() == b"from .b import x\nY = 2\n"
    exported, env, again = to_quilt(root, base, tmp_path)
    quilt(again, env, "push", "-a")
    assert (again / "pkg/__init__.py").read_bytes() == b"from .b import x\nY = 2\n"
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out


def test_an_export_says_where_each_fix_its_series_no_longer_lists_is(stack, tmp_path):
    """After an export, a rebase set fix-a aside (skipped/: it conflicts with the new
    release, and `bring-back` puts it back), fix-d landed upstream and fix-b was deleted. The
    next export said of each "(deleted, renamed or landed since)": of a fix waiting to be
    brought back, as if it were gone. Each is now said as what it is."""
    from helpers.git import commit_files

    root, base = stack
    exported, _, _ = to_quilt(root, base, tmp_path)
    upstream = tmp_path / "up-upstream"
    commit_files(upstream, {"a.py": A.replace(b"line3\n", b"line3 otherwise\n")
                            .replace(b"line18\n", b"line18 fixed\n")}, "v2", tag="v2")
    assert run_cli(root, "rebase", "--to", "up=v2").rc == 3  # stops on fix-a
    assert run_cli(root, "rebase", "--skip").rc == 1  # (a fix set aside needs attention)
    assert (root / "series/up/skipped/fix-a.patch").is_file()
    assert (root / "series/up/upstreamed/fix-d.patch").is_file()
    ok(root, "delete", "fix-b")
    run = ok(root, "export", "--quilt", str(exported))
    said = " ".join(run.err.split())
    listed = f"note: {exported / 'series'} no longer lists up/"
    assert listed + "fix-a.patch (no longer in the up series (set aside in " \
        "series/up/skipped/ by a rebase: `patchforge bring-back fix-a` puts it back)); its " \
        "file is left there, unlisted" in said, said
    assert listed + "fix-d.patch (no longer in the up series (landed upstream since, kept in " \
        "series/up/upstreamed/))" in said, said
    assert listed + "fix-b.patch (no longer in the up series (deleted since, kept in " \
        "series/up/deleted/))" in said, said
    assert "deleted, renamed or landed since" not in said, said


def test_an_export_says_which_patches_its_series_leaves_out(tmp_path, monkeypatch):
    """`export --quilt DIR --profile gfx950` into the directory a whole-series export wrote:
    DIR/series no longer listed fix-942 (gfx942 only), its file left there, and the export
    said nothing but "wrote 2 files"; a first `--profile` export left it out as silently, and
    `import quilt DIR --update` kept it aside without a word. Each now says so."""
    root, _ = profiles_stack(tmp_path, monkeypatch, BELOW)
    exported = tmp_path / "q"
    first = run_cli(root, "export", "--quilt", str(exported))
    assert first.rc == 0 and "left out of" not in first.err, first.text
    again = run_cli(root, "export", "--quilt", str(exported), "--profile", "gfx950")
    assert again.rc == 0, again.text
    assert (exported / "series").read_text() == "fix-all.patch\n"
    assert (exported / "fix-942.patch").exists()
    assert f"note: {exported / 'series'} no longer lists up/fix-942.patch (not in gfx950's " \
        "series); its file is left there, unlisted" in again.err, again.err
    fresh = tmp_path / "q2"
    alone = run_cli(root, "export", "--quilt", str(fresh), "--profile", "gfx950")
    assert f"note: up/fix-942.patch left out of {fresh / 'series'} (not in gfx950's series)" \
        in alone.err, alone.err
    back = run_cli(root, "import", "quilt", str(fresh), "--update")
    assert back.rc == 0, back.text
    assert f"note: up/fix-942.patch is not in gfx950's series, which {fresh} holds: kept as " \
        "it is" in back.err, back.err


@pytest.mark.parametrize("named", [True, False])
def test_the_way_back_an_export_names_in_a_stack_of_two_upstreams_is_taken(stack, tmp_path,
                                                                            named):
    """A stack of two upstreams: `export --quilt DIR --upstream up` (or without it, where only
    up has patches: DIR/series all the same) ended `next: ... patchforge import quilt DIR
    --update takes the changes back`, and that command, as printed, was refused: "several
    upstreams are configured; say which with --upstream". The way back it names now says
    which, and run as printed after a `quilt refresh`, it takes the change back."""
    import shlex

    from helpers.upstream import Upstream

    root, base = stack
    other = Upstream(tmp_path / "other-upstream", {"o.py": b"o\n"}, message="other: initial")
    ok(root, "upstream", "add", "other", "--git", str(other.path), "--at", "main",
       "--install-root", "/opt/other")
    exported = tmp_path / "q"
    run = ok(root, "export", "--quilt", str(exported), *(["--upstream", "up"] if named else []))
    (back,) = re.findall(r"`(patchforge import quilt [^`]*)`", run.out)
    env = quilt_env(tmp_path, exported, "")
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "-a")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line18 fixed\n", b"line18 fixed in quilt\n"))
    quilt(checkout, env, "refresh")
    taken = run_cli(root, *shlex.split(back)[1:])
    assert taken.rc == 0, (back, taken.text)
    assert "+line18 fixed in quilt" in patch_text(root, "fix-d.patch")


def test_export_over_a_fix_renamed_since_and_changed_in_quilt_gives_the_imports_advice(
        tmp_path, monkeypatch):
    """`export --quilt`, `patchforge rename fix-a fix-z`, fix-a.patch refreshed in quilt, then
    `export --quilt` again: the export said fix-a.patch "has left the series" and to give it a
    *new* name, which the import then refused (the change met fix-z's own lines). It says
    what `import quilt --update` says, fix-a.patch is fix-z.patch now, and to rename it alike
    in quilt; following that, the import takes the change into fix-z and the export runs."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path)
    for name, old, new in (("fix-a", b"line5\n", b"line5 a\n"),
                           ("fix-b", b"line15\n", b"line15 b\n")):
        ok(root, "new", name, "--file", "a.py", "-m", f"Fix {name}")
        work = root / ".patchforge/work/up/a.py"
        work.write_bytes(work.read_bytes().replace(old, new))
        ok(root, "refresh")
    exported, env, checkout = to_quilt(root, base, tmp_path)
    ok(root, "rename", "fix-a", "fix-z")
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line6\n", b"line6 quilt\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "pop", "-a")

    series = exported / "series"
    before = untouched(root, exported)
    run = run_cli(root, "export", "--quilt", str(exported))
    assert run.rc == 2, run.text
    assert f"{series}:1: lists fix-a.patch, which is fix-z.patch now (renamed in the up " \
        "series after `export --quilt` wrote it)" in run.err, run.err
    assert f"rename it alike in quilt: fix-a.patch to fix-z.patch in {series} (line 1) and " \
        f"{exported / 'fix-a.patch'} to {exported / 'fix-z.patch'}, then `patchforge import " \
        f"quilt {exported} --update` takes it back into {root / 'series/up/fix-z.patch'}" \
        in run.err, run.err
    assert "has left the up series" not in run.err and "new name" not in run.err
    assert untouched(root, exported) == before

    # As the export says: renamed alike in quilt, the import takes the change into fix-z.
    (exported / "fix-a.patch").rename(exported / "fix-z.patch")
    series.write_text(series.read_text().replace("fix-a.patch\n", "fix-z.patch\n"))
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-z.patch" in run.out, run.out
    assert "+line6 quilt\n" in patch_text(root, "fix-z.patch")
    ok(root, "export", "--quilt", str(exported))
    assert series.read_text() == "fix-z.patch\nfix-b.patch\n"


@pytest.mark.parametrize("kind", ["link", "dangling link", "fifo"])
def test_an_unlisted_file_of_the_series_is_read_as_the_projects_own(stack, tmp_path, kind):
    """quilt makes fix-n.patch; the series' directory holds an unlisted file of that name, a
    link (to a file out of the project, or to none) or a FIFO. It was read through the link
    (a dangling one taken for no file, then written over), or from the FIFO, blocking the
    import for ever. It is refused naming the file, as every reader of the stack's files does,
    with nothing written."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "fix-n.patch", "a.py",
              (checkout / "a.py").read_bytes().replace(b"line30\n", b"line30 new\n"))
    there = root / "series/up/fix-n.patch"
    outside = tmp_path / "outside.patch"
    outside.write_bytes(b"not the project's\n")
    if kind == "fifo":
        os.mkfifo(there)
    else:
        there.symlink_to(outside if kind == "link" else tmp_path / "none")
    series = (root / "series/up/series").read_bytes()
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc != 0, run.text
    assert str(there) in run.err, run.err
    assert ("is a symlink" if kind != "fifo" else "is not a regular file") in run.err, run.err
    assert (root / "series/up/series").read_bytes() == series
    assert there.is_symlink() if kind != "fifo" else not there.is_file()
    assert outside.read_bytes() == b"not the project's\n"


def test_a_patch_renamed_in_quilt_is_renamed_alike_in_the_series_never_made_a_new_fix(
        stack, tmp_path):
    """`quilt rename -P fix-a.patch fix-z.patch` in DIR: the import said fix-a.patch was
    deleted in quilt ("quilt delete?"), and with --delete kept it twice (under deleted/ and as
    a new fix-z.patch), its history cut in two and its Last-Update changed, the patch not.
    It is refused, with or without --delete, nothing written, saying fix-z.patch is fix-a.patch
    renamed and the `patchforge rename` that renames it alike; after that, nothing is left to
    take back and the fix is one, its bytes the same."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "rename", "-P", "fix-a.patch", "fix-z.patch")
    quilt(checkout, env, "pop", "-a")
    fix_a = (root / "series/up/fix-a.patch").read_bytes()
    for extra in ([], ["--delete"]):
        before = untouched(root, exported)
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert f"{exported / 'series'}:1: fix-z.patch is fix-a.patch renamed (`quilt rename`)" \
            ": nothing was taken back" in run.err, run.err
        assert "`patchforge rename fix-a fix-z`" in run.err, run.err
        assert "quilt delete" not in run.err, run.err
        assert untouched(root, exported) == before

    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing to take back" in run.out + run.err, run.text
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    assert (root / "series/up/fix-z.patch").read_bytes() == fix_a
    assert not (root / "series/up/deleted").exists()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


@pytest.mark.parametrize("taken_before", [False, True])
def test_a_patch_renamed_and_refreshed_in_quilt_is_renamed_alike_then_its_change_comes_back(
        stack, tmp_path, monkeypatch, taken_before):
    """`quilt rename fix-z.patch` of the pushed fix-a, a line changed, `quilt refresh`; the
    series left fix-a as exported (or, `taken_before`, as an import took quilt's earlier
    refresh back, a day later: its Last-Update is that day's). The import said fix-a.patch was
    deleted in quilt ("quilt delete?"), and the --delete it named put fix-a under deleted/ and
    added quilt's file as a new fix-z, the fix's history cut in two. Quilt's file keeps fix-a's
    header: it is said fix-a renamed and changed, with or without --delete, nothing written,
    with the `patchforge rename` that renames it alike; after it, quilt's change comes back
    into the one fix."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    if taken_before:
        a.write_bytes(a.read_bytes().replace(b"line6\n", b"line6 quilt\n"))
        quilt(checkout, env, "refresh")
        monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-02")
        ok(root, "import", "quilt", str(exported), "--update")
        assert "Last-Update: 2024-05-02" in patch_text(root, "fix-a.patch")
    quilt(checkout, env, "rename", "fix-z.patch")
    a.write_bytes(a.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "pop", "-a")
    for extra in ([], ["--delete"]):
        before = untouched(root, exported)
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert f"{exported / 'series'}:1: fix-z.patch is fix-a.patch renamed (`quilt rename`) " \
            "and changed in quilt: nothing was taken back" in run.err, run.err
        assert "`patchforge rename fix-a fix-z`, then run this again" in run.err, run.err
        assert "quilt delete" not in run.err, run.err
        assert untouched(root, exported) == before

    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-z.patch" in run.out, run.text
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    text = patch_text(root, "fix-z.patch")
    assert "+line3 fixed" in text and "+line5 quilt" in text and "Description: Fix fix-a" in text
    assert ("+line6 quilt" in text) is taken_before
    assert not (root / "series/up/deleted").exists()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_patch_renamed_in_quilt_after_the_series_changed_it_is_never_taken_over_the_change(
        stack, tmp_path):
    """fix-a changed in the series after the export, then quilt renamed its (older) file. Told
    it was fix-a renamed, `patchforge rename` let the import take quilt's older patch over the
    series' change; then told "quilt delete?", the hinted --delete put fix-a, with the series'
    change, under deleted/ and made quilt's older copy a new fix-z, every check green and the
    change in no overlay. Quilt's file is named for what it is, fix-a as the export wrote it
    before the series changed it, refused with or without --delete, nothing written; the way
    on it names (`patchforge rename`, then `export --quilt`) keeps the change, in the series
    and in quilt's tree."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "rename", "-P", "fix-a.patch", "fix-z.patch")
    quilt(checkout, env, "pop", "-a")
    for extra in ([], ["--delete"]):
        before = untouched(root, exported)
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert f"{exported / 'series'}:1: fix-z.patch is fix-a.patch as `export --quilt` wrote " \
            "it, before the up series changed it (`quilt rename`?): nothing was taken back" \
            in run.err, run.err
        assert "quilt delete" not in run.err, run.err
        assert f"`patchforge rename fix-a fix-z`, then `patchforge export --quilt {exported}`" \
            in run.err, run.err
        assert untouched(root, exported) == before
        assert "+line4 series" in patch_text(root, "fix-a.patch")

    ok(root, "rename", "fix-a", "fix-z")
    changed = (root / "series/up/fix-z.patch").read_bytes()
    run = ok(root, "import", "quilt", str(exported), "--update")  # renamed on both sides
    assert "nothing to take back" in run.out, run.text
    assert (root / "series/up/fix-z.patch").read_bytes() == changed
    assert not (root / "series/up/deleted").exists()
    ok(root, "export", "--quilt", str(exported))  # quilt's older copy is the export's own
    assert (exported / "series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    quilt(checkout, env, "push", "-a")
    assert b"line4 series\n" in (checkout / "a.py").read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    assert ok(root, "check").rc == 0


@pytest.mark.parametrize("how", ["renamed", "made"])
def test_a_patch_of_a_name_the_export_never_wrote_changed_on_both_sides_is_refused(
        stack, tmp_path, how):
    """fix-a renamed fix-z on both sides after the export (`rename`, `quilt rename`) and
    changed on both (edit + refresh, `quilt refresh`); or a fix-z made on both sides (`import
    overlay --name`, `quilt new`). The export wrote no fix-z.patch, so the series' fix-z was
    never checked for a change since: quilt's file was taken over it, exit 0, the series'
    change in no overlay nor anywhere in the series. Refused as a change on both sides is,
    nothing written."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    a = checkout / "a.py"
    if how == "renamed":
        change_fix_a_in_series(root)
        ok(root, "rename", "fix-a", "fix-z")
        quilt(checkout, env, "push", "fix-a.patch")
        quilt(checkout, env, "rename", "fix-z.patch")
        a.write_bytes(a.read_bytes().replace(b"line8\n", b"line8 quilt\n"))
        quilt(checkout, env, "refresh")
    else:
        overlay = tmp_path / "z.overlay"
        overlay.write_bytes(A.replace(b"line3\n", b"line3 fixed\n").replace(
            b"line18\n", b"line18 fixed\n").replace(b"line4\n", b"line4 series\n"))
        ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix-z",
           "-m", "Fix z")
        quilt(checkout, env, "push", "-a")
        quilt_new(checkout, env, "fix-z.patch", "a.py",
                  a.read_bytes().replace(b"line8\n", b"line8 quilt\n"))
    quilt(checkout, env, "pop", "-a")
    before = untouched(root, exported)
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert f"{exported / 'series'}:" in run.err and "fix-z.patch changed in quilt and in the " \
        "up series since `export --quilt` wrote it; taking quilt's back would lose the " \
        "series' change" in run.err, run.err
    assert untouched(root, exported) == before
    assert "+line4 series" in patch_text(root, "fix-z.patch")


def test_a_patch_renamed_in_quilt_after_an_import_took_it_back_is_said_renamed(stack, tmp_path):
    """`quilt refresh` of fix-a, `import quilt --update` (taken back), then `quilt rename
    fix-a fix-z`: quilt's file is no longer the series' patch byte for byte (the import made
    its diff again), so it was read as fix-a deleted in quilt and a new fix-z, and --delete
    cut the fix's history in two. It is said renamed, with or without --delete; after the
    `patchforge rename` it names, nothing is left to take back and `export --quilt` writes
    the series' fix-z over quilt's file."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line8\n", b"line8 quilt\n"))
    quilt(checkout, env, "refresh")
    ok(root, "import", "quilt", str(exported), "--update")
    quilt(checkout, env, "rename", "fix-z.patch")
    quilt(checkout, env, "pop", "-a")
    for extra in ([], ["--delete"]):
        before = untouched(root, exported)
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert f"{exported / 'series'}:1: fix-z.patch is fix-a.patch renamed (`quilt rename`)" \
            in run.err and "`patchforge rename fix-a fix-z`" in run.err, run.err
        assert untouched(root, exported) == before
    fix = (root / "series/up/fix-a.patch").read_bytes()
    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing to take back" in run.out, run.text
    assert (root / "series/up/fix-z.patch").read_bytes() == fix
    assert not (root / "series/up/deleted").exists()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "fix-z.patch").read_bytes() == fix
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_an_unlisted_file_where_a_deleted_fix_was_is_not_read_as_its_leftover(stack, tmp_path,
                                                                              kind):
    """fix-d is deleted from the series (kept under deleted/) and from DIR/series; the series'
    directory then holds, under its name, a link to a file outside the project holding the
    deleted fix's bytes, or a FIFO. `import quilt --update` looks there for a leftover of a
    `--delete` a kill cut short (the file kept under deleted/ byte for byte): it read through
    the link, took it for that leftover and removed it, and read the FIFO, blocking the import
    and the project's lock until something wrote to it. Neither is a file a `--delete` leaves:
    it is not read, and stays as it is."""

    root, base = stack
    exported, _, _ = to_quilt(root, base, tmp_path)
    ok(root, "delete", "fix-d")
    kept = (root / "series/up/deleted/fix-d.patch").read_bytes()
    listed = (exported / "series").read_text()
    (exported / "series").write_text("".join(line for line in listed.splitlines(True)
                                             if not line.startswith("fix-d.patch")))
    there = root / "series/up/fix-d.patch"
    outside = tmp_path / "outside.patch"
    outside.write_bytes(kept)
    feeder = FifoFeeder(there, kept)
    if kind == "fifo":
        os.mkfifo(there)
        feeder.start()
    else:
        there.symlink_to(outside)
    series = (root / "series/up/series").read_bytes()
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    feeder.done.set()
    assert run.rc == 0, run.err
    assert not feeder.read
    assert there.is_symlink() if kind == "link" else there.is_fifo()
    assert outside.read_bytes() == kept
    assert (root / "series/up/series").read_bytes() == series


@pytest.mark.parametrize("command", ["import", "export"])
def test_the_export_record_is_read_once_through_the_file_checked(stack, tmp_path, command):
    """`.patchforge-export` was checked (a regular file, not too big), then read again by
    each part that used it (what was taken, the profile, the order): a FIFO put in its place
    after the check (a swap by another process) blocked `import quilt --update` and a second
    `export --quilt`, and the project's lock, until something wrote to it. It is read once,
    through the descriptor that was checked. The swap is made here at the moment the record
    is opened for reading a second time (an audit hook: the filesystem race, made exact)."""
    import sys

    root, base = stack
    exported, _, _ = to_quilt(root, base, tmp_path)
    record = exported / ".patchforge-export"
    original = record.read_bytes()
    state = {"armed": True, "reads": 0}
    feeder = FifoFeeder(record, original)

    def swap_at_second_read(event, args) -> None:
        if not state["armed"] or event != "open" or isinstance(args[0], int):
            return
        path, mode, flags = args
        if os.fsdecode(os.fspath(path)) != str(record):
            return
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else \
            bool((flags or 0) & (os.O_WRONLY | os.O_RDWR))
        if writing:
            return
        state["reads"] += 1
        if state["reads"] == 2:
            state["armed"] = False
            record.unlink()
            os.mkfifo(record)
            feeder.start()

    sys.addaudithook(swap_at_second_read)  # (never removed: disarmed below)
    try:
        args = ("import", "quilt", str(exported), "--update") if command == "import" else \
            ("export", "--quilt", str(exported))
        run = run_cli(root, *args)
    finally:
        state["armed"] = False
        feeder.done.set()
    assert not feeder.read, run.err
    assert run.rc == 0 and state["reads"] == 1, (state, run.err)


@pytest.mark.parametrize("way", ["delete", "copy"])
def test_a_fix_the_series_only_renamed_deleted_in_quilt_is_read_as_deleted_there(stack,
                                                                              tmp_path, way):
    """`rename fix-a fix-z` in the series after the export (the fix unchanged), `quilt delete
    fix-a.patch` in quilt: the import kept fix-z with the note "joined the series after the
    export", which it did not (the export wrote it as fix-a), and quilt's deletion went
    unseen. It is read as deleted in quilt, as an exported fix is: refused without --delete,
    naming both names, nothing written; each way on named works: --delete keeps it under
    deleted/, and the series' fix-z copied into DIR and listed there is nothing to take back.
    Left in quilt under its old name, unchanged, it is said renamed, never "joined"."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")  # quilt still lists fix-a
    assert "joined the series" not in run.err, run.text
    assert "note: up/fix-z.patch is fix-a.patch as `export --quilt` wrote it, renamed in the " \
        "series since; kept in its place" in run.err, run.text
    fix_z = (root / "series/up/fix-z.patch").read_bytes()
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"

    quilt(checkout, env, "delete", "fix-a.patch")
    before = untouched(root, exported)
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert "fix-z.patch (fix-a.patch as `export --quilt` wrote it, renamed in the series since) " \
        f"is in the up series but not in {exported / 'series'} (quilt delete?)" in run.err, run.err
    assert "joined the series" not in run.err
    assert untouched(root, exported) == before
    if way == "delete":
        run = ok(root, "import", "quilt", str(exported), "--update", "--delete")
        assert "deleted up/fix-z.patch (kept as series/up/deleted/fix-z.patch)" in run.out
        assert (root / "series/up/deleted/fix-z.patch").read_bytes() == fix_z
        assert (root / "series/up/series").read_text() == "fix-b.patch\nfix-d.patch\n"
    else:
        assert f"or copy {root / 'series/up/fix-z.patch'} into {exported} and list it in " \
            f"{exported / 'series'}, then run this again" in run.err, run.err
        shutil.copyfile(root / "series/up/fix-z.patch", exported / "fix-z.patch")
        series = exported / "series"
        series.write_text("fix-z.patch\n" + series.read_text())
        run = ok(root, "import", "quilt", str(exported), "--update")
        assert "nothing to take back" in run.out, run.text
        assert (root / "series/up/series").read_text() == \
            "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
        assert (root / "series/up/fix-z.patch").read_bytes() == fix_z
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_fix_the_series_let_go_renamed_in_quilt_stays_out(stack, tmp_path):
    """fix-a deleted in the series after the export, and renamed fix-z in quilt, unchanged
    (`quilt rename`): the import added quilt's file as a new fix-z, the deleted fix back in
    the series and the overlays with "added up/fix-z.patch". As for a fix the series let go
    and quilt left unchanged, the series' decision stands: not taken back, a note says which
    fix quilt's file is, and the next export leaves it unlisted in DIR."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    ok(root, "delete", "fix-a")
    quilt(checkout, env, "rename", "-P", "fix-a.patch", "fix-z.patch")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "note: fix-z.patch is fix-a.patch renamed in quilt, which left the up series after " \
        "the export (deleted since, kept in series/up/deleted/) and is unchanged in quilt; not " \
        "taken back" in " ".join(run.err.split()), run.text
    assert "nothing to take back" in run.out, run.text
    assert (root / "series/up/series").read_text() == "fix-b.patch\nfix-d.patch\n"
    assert not (root / "series/up/fix-z.patch").exists()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_text() == "fix-b.patch\nfix-d.patch\n"
    assert ok(root, "status").rc == 0


def test_a_change_made_in_quilt_before_a_rebase_names_the_pin_and_a_way_that_works(stack,
                                                                                  tmp_path):
    """`export --quilt`, then `rebase --to` a revision that changes fix-a's context and an
    `edit` + `refresh` of fix-a in the series (line12), then a change to fix-a in quilt (on
    the tree at the old pin): quilt's diff does not apply on the new pin. The refusal said
    "`quilt push` it in the tree it was made for and `quilt refresh` it", which gives the same
    diff again, a loop. It names the cause (quilt made it at the export's pin, the series
    moved since) and a way on that works followed literally. (Without the series' own edit,
    the rebase's the one change since the export, quilt's change is judged onto the new pin:
    test_a_fix_the_rebase_wrote_again_refreshed_in_quilt_is_taken_back.)"""
    from helpers.git import commit_files

    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    commit_files(tmp_path / "up-upstream", {"a.py": A.replace(b"line6\n", b"line6 up\n")},
                 "upstream: line6", tag="v2")
    ok(root, "rebase", "--to", "up=v2")
    assert "line6 up" in patch_text(root, "fix-a.patch")
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line12\n", b"line12 series\n"))
    ok(root, "refresh")
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line2\n", b"line2 quilt\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "pop", "-a")
    before = patch_text(root, "fix-a.patch")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "series moved to v2" in run.err and base[:12] in run.err, run.text
    assert "quilt push" not in run.err and patch_text(root, "fix-a.patch") == before

    # The way on, as the hint says it.
    assert f"copy {root / 'series/up/fix-a.patch'} over it" in run.err
    shutil.copyfile(exported / "fix-a.patch", tmp_path / "quilts-fix-a.patch")
    shutil.copyfile(root / "series/up/fix-a.patch", exported / "fix-a.patch")
    ok(root, "import", "quilt", str(exported), "--update")
    assert "`patchforge edit fix-a`" in run.err
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line2\n", b"line2 quilt\n"))
    ok(root, "refresh")
    assert f"`patchforge export --quilt {exported}` again" in run.err
    ok(root, "export", "--quilt", str(exported))
    text = (exported / "fix-a.patch").read_text()
    assert "+line2 quilt" in text and "+line3 fixed" in text and "line6 up" in text
    assert "+line12 series" in text
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def hinted_commands(err: str) -> list[str]:
    """The commands a refusal's hint names between backticks, in the order it says them."""
    hint = err[err.index("hint:"):]
    return re.findall(r"`([^`]+)`", hint)


def test_a_patch_above_one_changed_in_the_series_is_refused_with_a_way_that_works(stack,
                                                                                   tmp_path):
    """fix-a changed in the series since the export (edit + refresh: line4), the pin did not;
    in quilt, fix-d (above it) changed a line whose context is fix-a's line4 as quilt's tree
    has it. quilt's diff does not apply on fix-d's base in the series. The refusal said "`quilt
    push` it in the tree it was made for and `quilt refresh` it", which in that tree gives the
    same diff again and the same refusal, round and round. It names fix-a as the patch the
    series changed since the export, and its way on, followed word for word in quilt's tree,
    takes quilt's change back with the series' change kept."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    quilt(checkout, env, "push", "-a")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line7\n", b"line7 quilt\n"))
    quilt(checkout, env, "refresh")
    before = {n: patch_text(root, n) for n in ("fix-a.patch", "fix-d.patch")}
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert "fix-a.patch, below it, changed in the up series since `export --quilt`" in run.err
    assert "in the tree it was made for" not in run.err
    assert {n: patch_text(root, n) for n in before} == before

    # The way on, word for word, in quilt's tree (bash reads each command as the hint says it).
    commands = hinted_commands(run.err)
    assert commands[0] == "quilt pop -a" and commands[-1] == "quilt refresh", commands
    for command in commands:
        proc = subprocess.run(["bash", "-c", command], cwd=checkout, env=env,
                              capture_output=True)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    ok(root, "import", "quilt", str(exported), "--update")
    text = patch_text(root, "fix-d.patch")
    assert "+line7 quilt" in text and "+line18 fixed" in text
    assert "+line4 series" in patch_text(root, "fix-a.patch")
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


@pytest.mark.parametrize("told_by", ["quilts-file", "history", "record"])
def test_a_fix_the_series_renamed_and_changed_deleted_in_quilt_is_read_as_deleted_there(
        stack, tmp_path, told_by):
    """`rename fix-a fix-z` and a change of it (edit + refresh) in the series after the export,
    `quilt delete fix-a.patch` in quilt: the import kept fix-z with the note "joined the series
    after the export", which it did not (the export wrote it as fix-a; its bytes are no longer
    the export's, so the rename went unseen), and quilt's deletion went unseen too. It is read
    as a fix changed in the series and deleted in quilt: refused with or without --delete,
    naming both names; the series' fix-z copied into DIR and listed there, as the hint says, is
    nothing to take back. Told by the file the export wrote, which `quilt delete` leaves in
    DIR (fix-z's header is fix-a's), or, where `quilt delete -r` removed it, by the history's
    `renamed` event in a stack that keeps one, and in one that keeps none by the header the
    export record keeps of each patch it wrote (it was read as "joined" there). Left in
    quilt under its old name, it is said renamed and changed, never "joined"."""
    root, base = stack
    if told_by == "history":
        ok(root, "ledger")  # a stack that keeps a ledger records each rename
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")  # quilt still lists fix-a
    assert "joined the series" not in run.err, run.text
    assert "note: up/fix-z.patch is fix-a.patch of the export, renamed and changed in the " \
        "series since; kept in its place" in run.err, run.text
    fix_z = (root / "series/up/fix-z.patch").read_bytes()

    quilt(checkout, env, "delete", *(["-r"] if told_by != "quilts-file" else []), "fix-a.patch")
    assert (exported / "fix-a.patch").exists() == (told_by == "quilts-file")
    assert (root / "series/history.jsonl").exists() == (told_by == "history")
    before = untouched(root, exported)
    for extra in ([], ["--delete"]):
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert "fix-z.patch (fix-a.patch when `export --quilt` wrote it, renamed in the series " \
            "since) changed in the up series since `export --quilt` wrote it, and " \
            f"{exported / 'series'} no longer lists it (quilt delete?" in run.err, run.err
        assert "joined the series" not in run.err
        assert untouched(root, exported) == before
    assert f"copy {root / 'series/up/fix-z.patch'} into {exported} and list it in " \
        f"{exported / 'series'}, then run this again" in run.err, run.err
    shutil.copyfile(root / "series/up/fix-z.patch", exported / "fix-z.patch")
    series = exported / "series"
    series.write_text("fix-z.patch\n" + series.read_text())
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing to take back" in run.out, run.text
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    assert (root / "series/up/fix-z.patch").read_bytes() == fix_z
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


@pytest.mark.parametrize("ledger", [False, True])
def test_a_fix_deleted_then_redone_under_another_name_alike_is_no_rename(
        stack, tmp_path, ledger):
    """`delete fix-a`, then fix-z made as fix-a was, with its description (the fix redone from
    scratch under another name), and `quilt delete fix-a.patch` in quilt (which leaves the file in
    DIR): fix-z's header is fix-a's, and the import took fix-z for fix-a renamed and changed
    since, refused, with the hint `patchforge delete fix-z`, which would take out a fix that
    never was fix-a. fix-a is kept under deleted/ (and the history says deleted, in a stack
    that keeps one, where only a `renamed` event tells a rename): fix-z joined after the
    export, nothing to take back, with or without --delete; quilt still listing fix-a, no
    note says fix-z is fix-a renamed."""
    root, base = stack
    if ledger:
        ok(root, "ledger")
    exported, env, checkout = to_quilt(root, base, tmp_path)
    ok(root, "delete", "fix-a")
    redone = tmp_path / "redone" / "fix-a.overlay"  # made as fix-a was: the same header
    redone.parent.mkdir()
    redone.write_bytes(A.replace(b"line18\n", b"line18 fixed\n")
                       .replace(b"line20\n", b"line20 other\n"))
    ok(root, "import", "overlay", str(redone), "--path", "a.py", "--name", "fix-z",
       "-m", "Fix fix-a")
    fix_z = (root / "series/up/fix-z.patch").read_bytes()
    run = ok(root, "import", "quilt", str(exported), "--update")  # quilt still lists fix-a
    assert "renamed" not in run.err, run.text

    quilt(checkout, env, "delete", "fix-a.patch")
    assert (exported / "fix-a.patch").exists()
    for extra in ([], ["--delete"]):
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 0, run.text
        assert "renamed" not in run.err and "patchforge delete" not in run.err, run.text
        assert "nothing to take back" in run.out, run.text
    assert (root / "series/up/fix-z.patch").read_bytes() == fix_z
    assert "fix-z.patch" in (root / "series/up/series").read_text()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_patch_renamed_and_its_header_edited_in_quilt_is_renamed_alike_then_taken_back(
        stack, tmp_path):
    """`quilt rename -P fix-a.patch fix-z.patch`, then `quilt header -e fix-z.patch` (its
    Description said better), its diff left as it was: the import said fix-a.patch was deleted
    in quilt ("quilt delete?"), and --delete put fix-a under deleted/ and added quilt's file
    as a new fix-z, the fix's history cut in two. Quilt's file holds fix-a's diff byte for
    byte: it is said fix-a renamed and changed, with or without --delete, nothing written,
    with the `patchforge rename` that renames it alike; after it, quilt's header comes back
    into the one fix."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "rename", "-P", "fix-a.patch", "fix-z.patch")
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/^Description: Fix fix-a$/Description: Fix fix-a, "
                      "said better/' \"$1\"\n")
    editor.chmod(0o755)
    quilt(checkout, dict(env, EDITOR=str(editor)), "header", "-e", "fix-z.patch")
    assert (exported / "fix-z.patch").read_bytes().startswith(
        b"Description: Fix fix-a, said better\n")
    quilt(checkout, env, "pop", "-a")
    for extra in ([], ["--delete"]):
        before = untouched(root, exported)
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert f"{exported / 'series'}:1: fix-z.patch is fix-a.patch renamed (`quilt rename`) " \
            "and changed in quilt: nothing was taken back" in run.err, run.err
        assert "`patchforge rename fix-a fix-z`" in run.err, run.err
        assert "quilt delete" not in run.err, run.err
        assert untouched(root, exported) == before

    diff = (root / "series/up/fix-a.patch").read_text().split("\ndiff --git", 1)[1]
    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-z.patch" in run.out, run.text
    text = patch_text(root, "fix-z.patch")
    assert text.startswith("Description: Fix fix-a, said better\n")
    assert text.split("\ndiff --git", 1)[1] == diff
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    assert not (root / "series/up/deleted").exists()
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_quilt_new_patch_without_a_header_is_taken_back_with_a_lint_warning(stack, tmp_path):
    """A patch `quilt new` made with no header comes back with its name for a Description (so
    the field DEP-3 and the series need is there). Before, `lint` said nothing of it, and `pr`
    drafted a pull request titled by the file name with no body. Now lint warns, naming the
    patch file and the line (a patch with a description of its own is not warned of)."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "norm-eps-doc.patch", "pkg/new.py", b"new = 1\n")
    ok(root, "import", "quilt", str(exported), "--update")
    assert patch_text(root, "norm-eps-doc.patch").startswith("Description: norm-eps-doc\n")
    run = run_cli(root, "lint")
    assert run.rc == 0, run.out + run.err
    warned = [line for line in run.out.splitlines() if "up/norm-eps-doc.patch" in line]
    assert len(warned) == 1 and warned[0].startswith("warning"), run.out
    assert "series/up/norm-eps-doc.patch line 1: the Description is only the patch's name " \
        "('norm-eps-doc')" in warned[0], run.out
    assert "fix-a.patch" not in run.out, run.out  # (`Description: Fix fix-a`: a description)


def test_an_export_of_several_upstreams_says_each_way_there_and_back_as_it_runs(stack, tmp_path):
    """Two upstreams: the export writes DIR/up and DIR/two. Before, the way back was said as
    `patchforge import quilt DIR/UPSTREAM --update --upstream UPSTREAM`, words to fill in, and
    neither that nor the single-series hint said which revision quilt's tree must be (a git
    upstream's checkout is made at it). Now each upstream has its own line, the pin named, and
    the import it gives, run as printed after a `quilt refresh` in that tree, takes it back."""
    root, base = stack
    ok(root, "upstream", "add", "two", "--git", str(tmp_path / "up-upstream"), "--at", base)
    overlay = tmp_path / "two.overlay"
    overlay.write_bytes(A.replace(b"line7\n", b"line7 two\n"))
    ok(root, "import", "overlay", str(overlay), "--upstream", "two", "--path", "a.py",
       "--name", "fix-two", "-m", "Fix two")
    exported = tmp_path / "q"
    out = ok(root, "export", "--quilt", str(exported)).out
    said = {}
    for line in out.splitlines():
        m = re.match(r"next: `QUILT_PATCHES=(\S+) quilt push -a` in (\w+)'s files at the pin "
                     r"\((?:(\w+), )?([0-9a-f]{12})\); after quilt refresh there, `(patchforge "
                     r"import quilt [^`]+)` takes the changes back$", line)
        if m:
            said[m.group(2)] = m.groups()
    assert sorted(said) == ["two", "up"], out
    directory, _, _, short, back = said["two"]
    assert directory == str(exported / "two") and short == base[:12], said
    assert said["up"][:3] == (str(exported / "up"), "up", "main"), said
    assert "DIR/UPSTREAM" not in out
    env = quilt_env(tmp_path, Path(directory), "")
    checkout = checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "-a")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line7 two\n", b"line7 two, said better\n"))
    quilt(checkout, env, "refresh")
    words = shlex.split(back)
    assert words[:3] == ["patchforge", "import", "quilt"], back
    ok(root, *words[1:])  # as printed, from the project
    assert "+line7 two, said better" in patch_text_of(root, "two", "fix-two.patch")


@pytest.mark.parametrize("layout", ["root", "data-purelib"])
def test_an_export_of_a_wheel_upstream_says_how_to_have_its_files_at_the_pin(
        tmp_path, monkeypatch, layout):
    """A wheel upstream (the stack's vllm): the export said "`quilt push -a` in the upstream's
    files at the pin (0.32.0, 35b30e734596)", and a wheel has no checkout: the user was left
    to find one. The line names the command that writes them (from the store, laid out as pip
    installs the wheel: one whose files are under NAME-VER.data/purelib too, which an unzip
    keeps there and quilt then cannot find); run as printed, `quilt push -a` there, an edit,
    `quilt refresh` and the import it gives take the change back."""
    from helpers.upstream import build_wheel

    need_tool("quilt")
    prefix = "tinypkg-1.0.data/purelib/" if layout == "data-purelib" else ""
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.0", {f"{prefix}tinypkg/a.py": A})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "1.0", "--install-root",
       "/opt")
    overlay = tmp_path / "a.overlay"
    overlay.write_bytes(A.replace(b"line3\n", b"line3 fixed\n"))
    ok(root, "import", "overlay", str(overlay), "--upstream", "w", "--path", "tinypkg/a.py",
       "--name", "fix-a", "-m", "Fix a")
    exported = tmp_path / "q"
    out = ok(root, "export", "--quilt", str(exported)).out
    m = re.search(r"next: `QUILT_PATCHES=(\S+) quilt push -a` in the upstream's files at the pin "
                  r"\(1\.0, [0-9a-f]{12}; a wheel has no checkout: `([^`]+)` writes its files at "
                  r"the pin into DIR\); after quilt refresh, `(patchforge import quilt [^`]+)` "
                  r"takes the changes back$", out, re.M)
    assert m, out
    files = tmp_path / "files"
    subprocess.run(["bash", "-c", m.group(2).replace("DIR", shlex.quote(str(files)))],
                   check=True)
    env = quilt_env(tmp_path, Path(m.group(1)), "")
    quilt(files, env, "push", "-a")
    a = files / "tinypkg/a.py"
    a.write_bytes(a.read_bytes().replace(b"line3 fixed\n", b"line3 fixed, said better\n"))
    quilt(files, env, "refresh")
    ok(root, *shlex.split(m.group(3))[1:])  # as printed, from the project
    assert "+line3 fixed, said better" in patch_text_of(root, "w", "fix-a.patch")


def test_the_files_an_export_says_to_lay_out_are_the_pinned_bytes_whatever_gitattributes_say(
        tmp_path):
    """A directory upstream (a site-packages copy) holding a .gitattributes: the command the
    export prints, `git archive` of the store, read it, and wrote other bytes than the pin's:
    pkg/a.py left out (`export-ignore`: quilt push said "No file to patch"), the commit id
    written into `$Format:%H$` (`export-subst`) and `$Id$` (`ident`), and CRLF line ends
    (`text eol=crlf`). The store's own attributes unset them: every file is laid out as
    pinned, `quilt push -a` applies each fix, and a `quilt refresh` comes back."""
    need_tool("quilt")
    site = tmp_path / "site"
    pinned = {"pkg/a.py": A, "pkg/_version.py": b'version = "$Format:%H$"\nname = "pkg"\n',
              "pkg/ids.txt": b"$Id$\nkept as it is\n",
              ".gitattributes": b"pkg/_version.py export-subst\npkg/a.py export-ignore\n"
                                b"*.txt ident\n*.py text eol=crlf\n"}
    for path, data in pinned.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(data)
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "d", "--dir", str(site), "--at", "v1", "--install-root", "/opt")
    fixed = {"pkg/a.py": A.replace(b"line3\n", b"line3 fixed\n"),
             "pkg/_version.py": pinned["pkg/_version.py"] + b"fixed = True\n",
             "pkg/ids.txt": pinned["pkg/ids.txt"].replace(b"kept", b"fixed")}
    for n, (path, data) in enumerate(fixed.items()):
        overlay = tmp_path / f"{n}.overlay"
        overlay.write_bytes(data)
        ok(root, "import", "overlay", str(overlay), "--upstream", "d", "--path", path,
           "--name", f"fix-{n}", "-m", f"Fix {path}")
    exported = tmp_path / "q"
    out = ok(root, "export", "--quilt", str(exported)).out
    m = re.search(r"next: `QUILT_PATCHES=(\S+) quilt push -a` in the upstream's files at the pin "
                  r"\(v1, [0-9a-f]{12}; the directory may have moved on: `([^`]+)` writes its "
                  r"files at the pin into DIR\); after quilt refresh, `(patchforge import quilt "
                  r"[^`]+)` takes the changes back$", out, re.M)
    assert m, out
    files = tmp_path / "files"
    subprocess.run(["bash", "-c", m.group(2).replace("DIR", shlex.quote(str(files)))],
                   check=True)
    assert tree_bytes(files) == pinned
    env = quilt_env(tmp_path, Path(m.group(1)), "")
    quilt(files, env, "push", "-a")
    assert {path: (files / path).read_bytes() for path in fixed} == fixed
    a = files / "pkg/a.py"
    a.write_bytes(a.read_bytes().replace(b"line3 fixed\n", b"line3 fixed, said better\n"))
    quilt(files, env, "refresh", "fix-0.patch")
    ok(root, *shlex.split(m.group(3))[1:])  # as printed, from the project
    assert "+line3 fixed, said better" in patch_text_of(root, "d", "fix-0.patch")


def patch_text_of(root: Path, upstream: str, name: str) -> str:
    return (root / "series" / upstream / name).read_text()


@pytest.mark.parametrize("header", [b"pkg: say what new is for\n",
                                    b"pkg: say what new is for\n\nThe C++ side reads it.\n"])
def test_a_quilt_new_patch_whose_header_is_a_commit_subject_keeps_it_as_its_description(
        stack, tmp_path, header):
    """`quilt header -r` given a commit subject that names its area (`pkg: say what ...`), the
    way quilt users and git write one. Before, `pkg` was read as a header field: the Description
    was the file name, the subject a stray field above it, and lint said there was no
    description at all. Now the subject is the Description, the words kept below the header."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "new-doc.patch", "pkg/new.py", b"new = 1\n")
    quilt(checkout, env, "header", "-r", "new-doc.patch", stdin=header)
    ok(root, "import", "quilt", str(exported), "--update")
    text = patch_text(root, "new-doc.patch")
    assert text.startswith("Description: pkg: say what new is for\n"), text
    head, words = text.split("\n\n", 1)
    assert "\npkg:" not in head, text
    assert words.startswith(header.decode()), text
    listed = ok(root, "list").out
    assert "up/new-doc.patch" in listed and listed.rstrip().endswith("pkg: say what new is for")
    run = run_cli(root, "lint")
    assert "new-doc" not in run.out, run.out


@pytest.mark.parametrize("words", [
    b"ROCm: skip negative slots\n",
    b"MoE: skip negative slots\n\nThe kernel read slot -1.\n",
    b"Note: skip negative slots\n\nSigned-off-by: A B <ab@example.com>\n",
    b"ROCm: skip negative slots\nSigned-off-by: A B <ab@example.com>\n",
    b"ROCm: skip negative slots\nSigned-off-by: A B <ab@example.com>\n"
    b"Fixes: 1234567890ab (\"moe: read the slots\")\n",
    b"Fixes: negative slots read past the table\n",
    b"Fixes: negative slots read past the table\n\nThe kernel read slot -1.\n",
    b"Fixes: 1234567890ab negative slots read past the table\n",
    b"Fixes: 1234567890ab negative slots read past the table\n\nThe kernel read slot -1.\n"])
def test_quilt_header_r_of_a_subject_naming_a_capitalized_area_keeps_the_fixs_fields(
        stack, tmp_path, words):
    """`quilt header -r` of an exported fix given words alone whose subject names its area
    capitalized (`ROCm: ...`, as vLLM and AITER subjects do), with git's trailers straight
    under it, or a subject that is itself `Fixes: ...` (naming the commit it mends by its
    hash or not). Before, each was read as a header of
    fields: the fix's header was replaced by it, Description, Author and Upstream-Status
    gone, and lint refused the fix. Now a `Name: value` line is a field only under a name
    DEP-3 or patchforge gives one, git's trailers only beside such a field: the subject is the
    Description, the words the description, the fix's other fields kept."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    before = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    quilt(checkout, env, "push", "fix-a.patch")
    quilt(checkout, env, "header", "-r", "fix-a.patch", stdin=words)
    ok(root, "import", "quilt", str(exported), "--update")
    after = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert after.get("Description") == words.decode().splitlines()[0], after.to_bytes()
    for name in ("Author", "Origin", "Upstream-Status", "Upstream"):
        assert after.get(name) == before.get(name), (name, after.to_bytes())
    assert after.description.startswith(words), after.to_bytes()
    assert b"+line3 fixed" in after.diff and lint_errors(root) == []


@pytest.mark.parametrize("header", [
    b"ROCm: say what new is for\n",
    b"ROCm: say what new is for\n\nThe C++ side reads it.\n",
    b"ROCm: say what new is for\nSigned-off-by: A B <ab@example.com>\n",
    b"Fixes: new had no words\n\nThe C++ side reads it.\n",
    b"Fixes: 1234567890ab new had no words\n"])
def test_a_quilt_new_patch_whose_subject_names_a_capitalized_area_keeps_it(stack, tmp_path,
                                                                           header):
    """As a lower-case area's subject (above), so a capitalized one's: `ROCm` no field; nor
    git's trailers under a subject, or a subject that is itself `Fixes: ...` (they were read
    as a header of fields: the Description was the file name, lint warned)."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "new-doc.patch", "pkg/new.py", b"new = 1\n")
    quilt(checkout, env, "header", "-r", "new-doc.patch", stdin=header)
    ok(root, "import", "quilt", str(exported), "--update")
    text = patch_text(root, "new-doc.patch")
    subject = header.decode().splitlines()[0]
    assert text.startswith(f"Description: {subject}\n"), text
    assert text.split("\n\n", 1)[1].startswith(header.decode()), text
    assert lint_errors(root) == []


def test_a_quilt_new_patch_made_at_the_exports_pin_after_the_series_moved_has_a_way_on(
        stack, tmp_path):
    """`quilt new` in the export's tree (at the old pin) after `rebase --to v2` moved the
    series, v2 changing the lines around quilt's change. It was refused as not applying on
    its base, with "`quilt push` it in the tree it was made for", or the series' patches
    below copied into quilt's directory, each giving the same diff again: round and round.
    Now the refusal names both pins and a way on that works as written: quilt's file moved
    out of DIR and unlisted, the import run again, the change made a new fix on v2 (`new`,
    the change, `refresh`), and `export --quilt DIR` for quilt to go on from v2."""
    from helpers.git import commit_files

    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    upstream = tmp_path / "up-upstream"
    commit_files(upstream, {"a.py": A.replace(b"line11\n", b"line11 upstream\n")}, "v2",
                 tag="v2")
    ok(root, "rebase", "--to", "up=v2")
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "new-x.patch", "a.py",
              (checkout / "a.py").read_bytes().replace(b"line10\n", b"line10 quilt\n"))
    source = exported / "new-x.patch"
    for _ in range(2):  # the same refusal, every time: nothing to do in quilt's tree
        run = run_cli(root, "import", "quilt", str(exported), "--update")
        assert run.rc == 2 and "the series moved to v2" in run.err, run.text
    assert "quilt push" not in run.err and "tree it was made for" not in run.err, run.err
    hint = run.err.split("hint:", 1)[1]
    assert f"move {source} out of {exported}" in hint, hint
    assert f"take its line out of {exported / 'series'} (line 4)" in hint, hint
    commands = [shlex.split(c) for c in re.findall(r"`(patchforge [^`]*)`", hint)]
    assert [c[:2] for c in commands] == [["patchforge", "new"], ["patchforge", "refresh"],
                                         ["patchforge", "export"]], hint
    # Followed word for word.
    kept = tmp_path / "kept-new-x.patch"
    shutil.move(source, kept)
    series = exported / "series"
    series.write_text(series.read_text().replace("new-x.patch\n", ""))
    ok(root, "import", "quilt", str(exported), "--update")
    ok(root, *commands[0][1:])
    work = root / ".patchforge/work/up/a.py"
    assert b"+line10 quilt" in kept.read_bytes()
    work.write_bytes(work.read_bytes().replace(b"line10\n", b"line10 quilt\n"))
    ok(root, *commands[1][1:])
    ok(root, *commands[2][1:])
    assert "new-x.patch" in series.read_text().splitlines()
    assert b"+line10 quilt" in (exported / "new-x.patch").read_bytes()
    assert b"line11 upstream" in (exported / "new-x.patch").read_bytes()  # made on v2
    ok(root, "overlays")
    for profile in ("gfx942", "gfx950"):
        text = (root / f"overlays/{profile}/up/a.py").read_bytes()
        assert text.count(b"line10 quilt") == 1 and b"line11 upstream" in text, text
    assert ok(root, "status").rc == 0


def test_a_patch_changed_in_quilt_and_in_the_series_is_refused_with_a_way_that_works(stack,
                                                                                    tmp_path):
    """fix-a changed in the series since the export (line4) and in quilt (line5). The refusal
    said "make one of them hold both changes, then run this again"; made so in quilt's patch,
    or in the series' alone, the next import was refused the same way, round and round (only
    the two being the same passes). Its way on, followed word for word (the series' patch made
    to hold both by edit + refresh, then copied over quilt's in quilt's tree), passes: nothing
    to take back, both changes in the series and in quilt's next push."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    quilt(checkout, env, "push", "fix-a.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "fix-a.patch changed in quilt and in the up series" in run.err, run.text
    assert tree_bytes(root / "series") == before
    commands = hinted_commands(run.err)
    assert commands[:2] == ["patchforge edit fix-a", "patchforge refresh"], commands
    ok(root, "edit", "fix-a")  # the files changed as quilt's patch does
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    ok(root, "refresh")
    for command in commands[2:]:
        proc = subprocess.run(["bash", "-c", command], cwd=checkout, env=env,
                              capture_output=True)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out
    text = patch_text(root, "fix-a.patch")
    assert "+line4 series" in text and "+line5 quilt" in text
    quilt(checkout, env, "push", "-a")
    assert b"line4 series\nline5 quilt\n" in a.read_bytes()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


@pytest.mark.parametrize("export", [["--profile", "gfx942"], []], ids=["profile", "whole"])
def test_quilt_header_r_keeps_the_fields_the_import_gave_a_new_fix(stack, tmp_path, export):
    """A patch `quilt new` made (no header) is taken back with the fields a fix needs (Author,
    Upstream-Status, from a `--profile` export Profiles); quilt's file never has them. A
    `quilt header -r` with a Description alone, taken back again, replaced the header whole:
    Author and Upstream-Status were gone (lint: "neither Origin nor Author"), and Profiles with
    them, so the gfx942 fix went into gfx950's overlays too. Fields quilt's user never saw are
    no deletion: they stay, and the ones quilt's header has are quilt's."""
    root, base = stack
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported), *export)
    env, checkout = quilt_env(tmp_path, exported, ""), checkout_of(tmp_path, base)
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "norm-eps-doc.patch", "pkg/new.py", b"new = 1\n")
    ok(root, "import", "quilt", str(exported), "--update")
    first = parse_patch_file((root / "series/up/norm-eps-doc.patch").read_bytes(), "p")
    author, status = first.get("Author"), first.get("Upstream-Status")
    assert author and status == "Pending"
    quilt(checkout, env, "header", "-r", stdin=b"Description: Document the eps of the norm\n")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/norm-eps-doc.patch" in run.out, run.out
    fix = parse_patch_file((root / "series/up/norm-eps-doc.patch").read_bytes(), "p")
    assert fix.get("Description") == "Document the eps of the norm"
    assert (fix.get("Author"), fix.get("Upstream-Status")) == (author, status)
    assert fix.get("Profiles") == ("gfx942" if export else None)
    assert lint_errors(root) == []
    ok(root, "overlays")
    assert (root / "overlays/gfx950/up/pkg/new.py").exists() == (not export)
    # A field quilt's header has is quilt's: an Author written there replaces the one kept.
    quilt(checkout, env, "header", "-r", stdin=b"Description: Document the eps of the norm\n"
                                                b"Author: Ada <ada@example.com>\n")
    ok(root, "import", "quilt", str(exported), "--update")
    fix = parse_patch_file((root / "series/up/norm-eps-doc.patch").read_bytes(), "p")
    assert (fix.get("Author"), fix.get("Upstream-Status")) == ("Ada <ada@example.com>", status)


def test_quilt_header_r_of_an_exported_fix_is_quilt_users_header(stack, tmp_path):
    """The fields of a patch the export wrote were in quilt's file: a `quilt header -r` that
    leaves one out (Upstream-Status) takes it out, as before; lint says so."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    quilt(checkout, env, "header", "-r", "fix-a.patch",
          stdin=b"Description: Fix fix-a better\nAuthor: Ada <ada@example.com>\n")
    ok(root, "import", "quilt", str(exported), "--update")
    fix = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "p")
    assert fix.get("Description") == "Fix fix-a better" and fix.get("Upstream-Status") is None


@pytest.mark.parametrize("words", [b"Negative slots are skipped\n",
                                   b"cache: negative slots are skipped\n",
                                   b"cache: negative slots are skipped\n\nThe second paragraph.\n"])
def test_quilt_header_r_with_words_alone_is_the_fixs_description(stack, tmp_path, words):
    """`quilt header -r` of an exported fix with words alone (quilt's users write a subject, a
    paragraph; no `Name: value` field). Words without a colon were read as no header (a tool
    that wrote the diff alone): the series' header was kept whole and quilt's words dropped
    unsaid. A subject with an area (`cache: ...`) was read as the whole header: Description,
    Author and Upstream-Status were gone and lint refused the fix. The words are the fix's
    description now (its first line the Description, as a fix `quilt new` made gets one); the
    fields they never speak of stay; taking it back again changes nothing."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    before = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "p")
    quilt(checkout, env, "push", "fix-a.patch")
    quilt(checkout, env, "header", "-r", "fix-a.patch", stdin=words)
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.out
    fix = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "p")
    assert fix.description.strip() == words.strip()
    assert fix.get("Description") == words.decode().splitlines()[0]
    for name in ("Author", "Upstream-Status", "Upstream"):
        assert fix.get(name) == before.get(name), name
    assert fix.diff == before.diff
    assert lint_errors(root) == []
    # The next export shows quilt the header taken; taking that back again is no change.
    ok(root, "export", "--quilt", str(exported))
    taken = (root / "series/up/fix-a.patch").read_bytes()
    assert words in (exported / "fix-a.patch").read_bytes()
    ok(root, "import", "quilt", str(exported), "--update")
    assert (root / "series/up/fix-a.patch").read_bytes() == taken


@pytest.mark.parametrize("how", ["ledger-after-export", "renamed-by-hand"])
def test_a_fix_renamed_where_the_history_does_not_say_so_is_read_by_its_header(
        stack, tmp_path, how):
    """In a stack that keeps a history, fix-a renamed to fix-z and changed in the series since
    the export, with no `renamed` event (renamed before the history was switched on, or by hand
    in git), then `quilt delete fix-a.patch` (which leaves the export's file in DIR, fix-z's
    header in it): the import kept fix-z with the note "joined the series after the export"
    and quilt's deletion went unseen, since only a `renamed` event counted there. The header
    tells as in a stack with no history: refused as a fix changed in the series and deleted
    in quilt, with or without --delete; the hint's way that keeps it works as written."""
    root, base = stack
    if how == "renamed-by-hand":
        ok(root, "ledger")
    exported, env, checkout = to_quilt(root, base, tmp_path)
    change_fix_a_in_series(root)
    if how == "ledger-after-export":
        ok(root, "rename", "fix-a", "fix-z")
        ok(root, "ledger")
    else:
        up = root / "series/up"
        (up / "fix-a.patch").rename(up / "fix-z.patch")
        (up / "series").write_text((up / "series").read_text().replace("fix-a", "fix-z"))
    ok(root, "rename", "fix-d", "fix-e")  # an event: the history is there
    assert (root / "series/history.jsonl").is_file()
    fix_z = (root / "series/up/fix-z.patch").read_bytes()
    quilt(checkout, env, "delete", "fix-a.patch")
    series = exported / "series"
    series.write_text(series.read_text().replace("fix-d", "fix-e"))
    shutil.copyfile(root / "series/up/fix-e.patch", exported / "fix-e.patch")
    before = untouched(root, exported)
    for extra in ([], ["--delete"]):
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert "fix-z.patch (fix-a.patch when `export --quilt` wrote it, renamed in the series " \
            "since) changed in the up series since" in run.err, run.err
        assert "joined the series" not in run.err and untouched(root, exported) == before
    shutil.copyfile(root / "series/up/fix-z.patch", exported / "fix-z.patch")
    series.write_text("fix-z.patch\n" + series.read_text())
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "nothing to take back" in run.out and "joined the series" not in run.err, run.text
    assert (root / "series/up/fix-z.patch").read_bytes() == fix_z


def test_a_patch_renamed_with_header_and_diff_changed_in_quilt_is_asked_with_the_rename(
        stack, tmp_path):
    """`quilt rename` of fix-a to fix-z, `quilt header -e` and a change of its diff (`quilt
    refresh`): nothing tells the rename byte for byte, and the refusal said only "quilt
    delete?", its ways `--delete` (fix-a under deleted/, fix-z a new fix: the history cut in
    two) or listing fix-a again. Quilt's new fix-z changes fix-a's file: the refusal asks
    both, with the `patchforge rename fix-a fix-z` that, followed, takes quilt's header and
    change back into the one fix. A new patch of other files is no rename asked."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "rename", "-P", "fix-a.patch", "fix-z.patch")
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/^Description: Fix fix-a$/Description: Fix fix-a, "
                      "said better/' \"$1\"\n")
    editor.chmod(0o755)
    quilt(checkout, dict(env, EDITOR=str(editor)), "header", "-e", "fix-z.patch")
    quilt(checkout, env, "pop", "fix-z.patch")
    a = checkout / "a.py"
    a.write_bytes(a.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "pop", "-a")
    before = untouched(root, exported)
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and untouched(root, exported) == before, run.text
    assert "fix-a.patch is in the up series but not in " f"{exported / 'series'} (quilt " \
        "delete? or `quilt rename` of fix-a.patch to fix-z.patch, new in quilt and changing " \
        "the same files?)" in run.err, run.err
    assert "`patchforge rename fix-a fix-z`, then run this again, which takes quilt's change " \
        "back into it; where quilt deleted it: `--delete`" in run.err, run.err
    ok(root, "rename", "fix-a", "fix-z")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-z.patch" in run.out, run.text
    assert (root / "series/up/series").read_text() == "fix-z.patch\nfix-b.patch\nfix-d.patch\n"
    fix_z = patch_text(root, "fix-z.patch")
    assert "Description: Fix fix-a, said better\n" in fix_z and "+line5 quilt\n" in fix_z
    assert "+line3 fixed\n" in fix_z and not (root / "series/up/deleted").exists()
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_patch_deleted_and_a_new_one_of_other_files_asks_no_rename(stack, tmp_path):
    """`quilt delete -r fix-a.patch` and a `quilt new` of another file: "quilt delete?" only."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "-a")
    quilt(checkout, env, "pop", "-a")
    quilt(checkout, env, "delete", "-r", "fix-a.patch")
    quilt(checkout, env, "push", "-a")
    quilt_new(checkout, env, "fix-n.patch", "pkg/new.py", b"new = 1\n")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "(quilt delete?)" in run.err and "rename" not in run.err, run.text


def test_a_fix_set_aside_or_landed_then_changed_in_quilt_is_refused_with_its_way_on(
        stack, tmp_path):
    """After an export, quilt refreshed fix-a and fix-d; then a rebase to v2 set fix-a aside
    (it conflicts there) and found fix-d landed upstream. The refusal said either "left the
    series (deleted, renamed, or landed upstream)" and to give it a new name: a second copy of
    a set-aside fix, whose quilt diff, made on the export's pin, then did not apply, and the
    next refusal sent quilt's user back to the tree it was made in, again and again. Each is
    now said as what it is, with the moved pin, and its hint, followed as written, takes
    quilt's change into the series."""
    from helpers.git import commit_files

    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    for name, old in (("fix-a.patch", b"line3 fixed\n"), ("fix-d.patch", b"line18 fixed\n")):
        quilt(checkout, env, "push", name)
        work = checkout / "a.py"
        work.write_bytes(work.read_bytes().replace(old, old[:-1] + b" in quilt\n"))
        quilt(checkout, env, "refresh")
    upstream = tmp_path / "up-upstream"
    commit_files(upstream, {"a.py": A.replace(b"line3\n", b"line3 otherwise\n")
                            .replace(b"line18\n", b"line18 fixed\n")}, "v2", tag="v2")
    assert run_cli(root, "rebase", "--to", "up=v2").rc == 3  # stops on fix-a
    assert run_cli(root, "rebase", "--skip").rc == 1
    assert (root / "series/up/skipped/fix-a.patch").is_file()
    assert (root / "series/up/upstreamed/fix-d.patch").is_file()
    before = untouched(root, exported)
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    said = " ".join(run.text.split())
    assert run.rc == 2 and "fix-a.patch was set aside by a rebase (series/up/skipped/" \
        "fix-a.patch)" in said and "the series moved to v2" in said, said
    assert f"{base[:12]}" in said and "give it a new name" not in said, said
    assert untouched(root, exported) == before
    # The hint, as written.
    assert "keep a copy of" in said and "`patchforge bring-back fix-a`" in said, said
    copy = (exported / "fix-a.patch").read_bytes()
    stop = run_cli(root, "bring-back", "fix-a")
    assert stop.rc == 3, stop.text  # it conflicts with v2's line3: resolved as a user would
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(A.replace(b"line3\n", b"line3 otherwise fixed\n")
                     .replace(b"line18\n", b"line18 fixed\n"))
    ok(root, "bring-back", "--continue")
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    assert b"+line3 fixed in quilt\n" in copy
    work.write_bytes(re.sub(rb"line3 [^\n]*\n", b"line3 otherwise fixed in quilt\n",
                            work.read_bytes(), count=1))
    ok(root, "refresh")
    shutil.copyfile(root / "series/up/fix-a.patch", exported / "fix-a.patch")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    said = " ".join(run.text.split())
    assert run.rc == 2 and "fix-d.patch landed upstream (series/up/upstreamed/fix-d.patch)" \
        in said and "the series moved to v2" in said, said
    series = exported / "series"
    series.write_text("".join(line for line in series.read_text().splitlines(True)
                              if not line.startswith("fix-d.patch")))
    ok(root, "import", "quilt", str(exported), "--update")
    ok(root, "new", "fix-d-more", "--file", "a.py")
    work.write_bytes(work.read_bytes().replace(b"line18 fixed\n", b"line18 fixed in quilt\n"))
    ok(root, "refresh")
    ok(root, "overlays")
    done = (root / "overlays/gfx950/up/a.py").read_bytes()
    assert done.count(b"line3 otherwise fixed in quilt\n") == 1, done
    assert done.count(b"line18 fixed in quilt\n") == 1, done
    assert ok(root, "status").rc == 0




def set_aside_after_export(root, base, tmp_path):
    """Export, then a rebase to v2 (line3 changed there) that sets fix-a aside."""
    exported, env, checkout = to_quilt(root, base, tmp_path)
    commit_files(tmp_path / "up-upstream", {"a.py": A.replace(b"line3\n", b"line3 otherwise\n")},
                 "v2", tag="v2")
    assert run_cli(root, "rebase", "--to", "up=v2").rc == 3  # stops on fix-a
    assert run_cli(root, "rebase", "--skip").rc == 1
    assert (root / "series/up/skipped/fix-a.patch").is_file()
    return exported, env, checkout


def test_a_set_aside_fix_renamed_and_changed_in_quilt_is_brought_back_not_made_twice(
        stack, tmp_path):
    """fix-a set aside by a rebase after the export, then in quilt renamed fix-z and changed
    (`quilt rename`, `quilt refresh`). The refusal read it as a fix new in quilt and said to
    make quilt's change a new fix on v2 (`patchforge new fix-z`): a second copy of fix-a,
    which `bring-back` then puts in beside it. Now it names fix-a as set aside, renamed in
    quilt, and its way on (bring-back, rename, edit, refresh, the series' patch copied over
    quilt's), followed word for word, takes quilt's change into the one fix."""
    root, base = stack
    exported, env, checkout = set_aside_after_export(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    quilt(checkout, env, "rename", "fix-z.patch")
    work = checkout / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line3 fixed\n", b"line3 fixed in quilt\n"))
    quilt(checkout, env, "refresh")
    series_before = (root / "series/up/series").read_bytes()
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    said = " ".join(run.text.split())
    assert run.rc == 2, run.text
    assert "fix-z.patch is fix-a.patch renamed in quilt (`quilt rename`), which was set aside " \
        "by a rebase (series/up/skipped/fix-a.patch)" in said, said
    assert "patchforge new" not in said and "the series moved to v2" in said, said
    assert (root / "series/up/series").read_bytes() == series_before
    hint = said.split("hint:", 1)[1]
    commands = re.findall(r"`(patchforge [^`]*)`", hint)
    assert commands == ["patchforge bring-back fix-a", "patchforge rename fix-a fix-z",
                        "patchforge edit fix-z", "patchforge refresh"], hint
    # Followed word for word.
    copy = (exported / "fix-z.patch").read_bytes()
    assert b"+line3 fixed in quilt\n" in copy
    stop = run_cli(root, "bring-back", "fix-a")
    assert stop.rc == 3, stop.text  # it meets v2's line3: resolved as a user would
    mine = root / ".patchforge/work/up/a.py"
    mine.write_bytes(A.replace(b"line3\n", b"line3 otherwise fixed\n")
                     .replace(b"line18\n", b"line18 fixed\n"))
    ok(root, "bring-back", "--continue")
    ok(root, "rename", "fix-a", "fix-z")
    ok(root, "edit", "fix-z")
    mine.write_bytes(re.sub(rb"line3 [^\n]*\n", b"line3 otherwise fixed in quilt\n",
                            mine.read_bytes(), count=1))
    ok(root, "refresh")
    shutil.copyfile(root / "series/up/fix-z.patch", exported / "fix-z.patch")
    back = ok(root, "import", "quilt", str(exported), "--update")
    # Nothing of quilt's to take: the order only (bring-back put fix-a last; quilt has it first).
    assert back.out.startswith("reordered up's series") and back.err == "", back.text
    assert (root / "series/up/series").read_text().split() == ["fix-z.patch", "fix-b.patch",
                                                                "fix-d.patch"]
    assert not (root / "series/up/skipped").is_dir() or \
        not any((root / "series/up/skipped").iterdir())
    assert "fix-z.patch" in (root / "series/up/series").read_text().split()
    ok(root, "overlays")
    for profile in ("gfx942", "gfx950"):
        done = (root / f"overlays/{profile}/up/a.py").read_bytes()
        assert done.count(b"line3 otherwise fixed in quilt\n") == 1, done
        assert b"line3 fixed" not in done, done
    assert ok(root, "status").rc == 0


def test_a_set_aside_fix_renamed_in_quilt_unchanged_says_where_it_is(stack, tmp_path):
    """The same fix renamed in quilt and left unchanged: not taken back, and the note said it
    "left the series (deleted, renamed, or landed upstream)", as if it were gone; it names
    skipped/ and the bring-back that puts it back now."""
    root, base = stack
    exported, env, checkout = set_aside_after_export(root, base, tmp_path)
    quilt(checkout, env, "rename", "-P", "fix-a.patch", "fix-z.patch")
    run = ok(root, "import", "quilt", str(exported), "--update")
    said = " ".join(run.err.split())
    assert "note: fix-z.patch is fix-a.patch renamed in quilt, which left the up series after " \
        "the export (set aside in series/up/skipped/ by a rebase: `patchforge bring-back " \
        "fix-a` puts it back) and is unchanged in quilt; not taken back" in said, run.text
    assert not (root / "series/up/fix-z.patch").exists()




def moved_after_export(root, base, tmp_path, files):
    """Export, then `rebase --to v2`, v2 changing `files` only: (DIR, quilt's env, its tree,
    v2's commit)."""
    exported, env, checkout = to_quilt(root, base, tmp_path)
    v2 = commit_files(tmp_path / "up-upstream", files, "v2", tag="v2")
    ok(root, "rebase", "--to", "up=v2")
    return exported, env, checkout, v2


def test_a_fix_the_rebase_only_moved_refreshed_in_quilt_is_taken_back(stack, tmp_path):
    """v2 adds a file and changes none of fix-a's: the rebase wrote fix-a with v2's `Base`,
    nothing else. `quilt refresh` of fix-a (line5 changed) was refused as "changed in quilt
    and in the up series", a change of the series that was only the pin. Taken back now, on
    v2, as a change of quilt's alone."""
    root, base = stack
    exported, env, checkout, v2 = moved_after_export(
        root, base, tmp_path, {"pkg/new.txt": b"new\n"})
    before = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert before.get("Base") == v2 != base
    quilt(checkout, env, "push", "fix-a.patch")
    work = checkout / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    after = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert after.get("Base") == v2
    assert b"+line3 fixed\n" in after.diff and b"+line5 quilt\n" in after.diff, after.diff
    ok(root, "overlays")
    done = (root / "overlays/gfx950/up/a.py").read_bytes()
    assert done.count(b"line3 fixed\n") == 1 and done.count(b"line5 quilt\n") == 1, done
    assert ok(root, "status").rc == 0
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out


def test_a_fix_the_rebase_only_moved_deleted_in_quilt_goes_with_delete(stack, tmp_path):
    """The same fix taken out in quilt (`quilt delete`): refused even with --delete as
    "changed in the up series since", its change the pin alone. `--delete` takes it out now,
    kept under deleted/."""
    root, base = stack
    exported, env, checkout, _ = moved_after_export(
        root, base, tmp_path, {"pkg/new.txt": b"new\n"})
    quilt(checkout, env, "delete", "fix-a.patch")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "quilt delete?" in run.err and "changed in the up" not in run.err, \
        run.text
    run = ok(root, "import", "quilt", str(exported), "--update", "--delete")
    assert "deleted up/fix-a.patch" in run.out, run.text
    assert (root / "series/up/series").read_text().split() == ["fix-b.patch", "fix-d.patch"]
    assert any((root / "series/up/deleted").iterdir())


@pytest.mark.parametrize("upstream_change", [
    (b"line20\n", b"line20 v2\n"),  # far from fix-a's lines: its `index` line and numbers
    (b"line5\n", b"line5 v2\n")])   # in its hunk's context
def test_a_fix_the_rebase_wrote_again_refreshed_in_quilt_is_taken_back(stack, tmp_path,
                                                                       upstream_change):
    """v2 changes a.py where fix-a does not (line20, or line5 of its hunk's context), so the
    rebase wrote fix-a's diff again on v2, the change the same. `quilt refresh` of fix-a in
    the export's tree (line10 changed) was refused as "changed in quilt and in the up
    series", the series' change the rebase's alone. Taken back now, quilt's change judged onto
    v2 as the rebase judges a fix, both changes in fix-a once."""
    root, base = stack
    old, new = upstream_change
    exported, env, checkout, v2 = moved_after_export(
        root, base, tmp_path, {"a.py": A.replace(old, new)})
    rebased = (root / "series/up/fix-a.patch").read_bytes()
    assert parse_patch_file(rebased, "fix-a.patch").get("Base") == v2
    quilt(checkout, env, "push", "fix-a.patch")
    work = checkout / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line10\n", b"line10 quilt\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    after = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert after.get("Base") == v2
    assert b"+line3 fixed\n" in after.diff and b"+line10 quilt\n" in after.diff, after.diff
    ok(root, "overlays")
    done = (root / "overlays/gfx950/up/a.py").read_bytes()
    assert done == A.replace(old, new).replace(b"line3\n", b"line3 fixed\n").replace(
        b"line10\n", b"line10 quilt\n").replace(b"line18\n", b"line18 fixed\n"), done
    assert ok(root, "status").rc == 0 and lint_errors(root) == []
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out


def test_a_fix_taken_back_then_rewritten_by_a_rebase_comes_back_from_quilt_again(stack,
                                                                               tmp_path):
    """A second round: quilt's change to fix-a taken back, then `rebase --to v2` wrote fix-a
    again (v2 changed line5, in its hunk's context), then fix-a refreshed once more in quilt's
    tree. The series' patch is the import's, moved by the rebase: quilt's second change is
    taken back on v2 too, the first kept."""
    root, base = stack
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", "fix-a.patch")
    work = checkout / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line10\n", b"line10 quilt\n"))
    quilt(checkout, env, "refresh")
    ok(root, "import", "quilt", str(exported), "--update")
    commit_files(tmp_path / "up-upstream", {"a.py": A.replace(b"line5\n", b"line5 v2\n")}, "v2",
                 tag="v2")
    ok(root, "rebase", "--to", "up=v2")
    work.write_bytes(work.read_bytes().replace(b"line11\n", b"line11 quilt\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    ok(root, "overlays")
    done = (root / "overlays/gfx950/up/a.py").read_bytes()
    assert done == A.replace(b"line5\n", b"line5 v2\n").replace(
        b"line3\n", b"line3 fixed\n").replace(b"line10\n", b"line10 quilt\n").replace(
        b"line11\n", b"line11 quilt\n").replace(b"line18\n", b"line18 fixed\n"), done
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_fix_the_rebase_changed_and_quilt_changed_is_still_refused(stack, tmp_path):
    """The mirror: the series changed fix-a after the rebase (`edit` + `refresh`, line3 fixed
    otherwise), and quilt changed it too: refused as before, the series untouched."""
    root, base = stack
    exported, env, checkout, _ = moved_after_export(
        root, base, tmp_path, {"a.py": A.replace(b"line20\n", b"line20 v2\n")})
    ok(root, "edit", "fix-a")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line3 fixed\n", b"line3 fixed twice\n"))
    ok(root, "refresh")
    quilt(checkout, env, "push", "fix-a.patch")
    work = checkout / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    series = (root / "series/up/fix-a.patch").read_bytes()
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "changed in quilt and in the up series" in run.err, run.text
    assert (root / "series/up/fix-a.patch").read_bytes() == series


def test_a_quilt_change_upstream_made_itself_after_a_rewrite_is_refused(tmp_path, monkeypatch):
    """The rebase wrote fix-a again on v2 (v2 changed k.py), and v2 adds `y += 1` in f; quilt,
    in the export's tree, added that same line to f a few lines up in fix-a. Carried onto v2
    as the rebase's write, the line would run twice: refused as a change on both sides,
    nothing written."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    k = (b"def f(x):\n    y = x + 1\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    e = 5\n"
         b"    z = y * 2\n    return z\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    root, base = git_project(tmp_path, {"k.py": k})
    overlay = tmp_path / "fix-a.overlay"
    overlay.write_bytes(k.replace(b"    return x\n", b"    return -x\n"))
    ok(root, "import", "overlay", str(overlay), "--path", "k.py", "--name", "fix-a",
       "-m", "Fix a")
    exported, env, checkout, _ = moved_after_export(
        root, base, tmp_path, {"k.py": k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n")})
    series_before = tree_bytes(root / "series")
    quilt(checkout, env, "push", "fix-a.patch")
    (checkout / "k.py").write_bytes((checkout / "k.py").read_bytes().replace(
        b"    y = x + 1\n", b"    y = x + 1\n" + line))
    quilt(checkout, env, "refresh")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "changed in quilt and in the up series" in run.err, run.text
    assert tree_bytes(root / "series") == series_before


def test_a_fix_the_rebase_only_moved_refreshed_into_a_file_upstream_changed_is_refused(
        tmp_path, monkeypatch):
    """fix-a (a.py) is only moved by the rebase to v2, but v2 adds `y += 1` to k.py; in
    quilt's tree (the export's pin) fix-a is refreshed to add that same line to k.py a few
    lines up. Taken back as a Base-only move, quilt's change was carried onto v2 unjudged:
    "updated", exit 0, and k.py ran `y += 1` twice. Refused now as a change on both sides,
    the series untouched."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    k = (b"def f(x):\n    y = x + 1\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    e = 5\n"
         b"    z = y * 2\n    return z\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    root, base = git_project(tmp_path, {"a.py": A, "k.py": k})
    overlay = tmp_path / "fix-a.overlay"
    overlay.write_bytes(A.replace(b"line3\n", b"line3 fixed\n"))
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix-a",
       "-m", "Fix a")
    exported, env, checkout, v2 = moved_after_export(
        root, base, tmp_path, {"k.py": k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n")})
    series_before = tree_bytes(root / "series")
    quilt(checkout, env, "push", "fix-a.patch")
    quilt(checkout, env, "add", "k.py")
    (checkout / "k.py").write_bytes(k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line))
    quilt(checkout, env, "refresh")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "changed in quilt and in the up series" in run.err, run.text
    assert tree_bytes(root / "series") == series_before
    ok(root, "overlays")
    for done in root.glob("overlays/**/k.py"):
        assert done.read_bytes().count(line) == 1, done.read_bytes()


def with_header_lines(root: Path, name: str, *lines: str) -> None:
    """`lines` written under the `Base:` line of series/up/NAME, as a person adds a check."""
    path = root / "series/up" / name
    text = path.read_text().split("\n")
    at = next(k for k, line in enumerate(text) if line.startswith("Base:"))
    path.write_text("\n".join(text[:at + 1] + list(lines) + text[at + 1:]))


def folded(root: Path, base: str, tmp_path: Path, name: str, into: str):
    """Export, then in quilt: `quilt push INTO`, `quilt fold < NAME`, `quilt refresh`,
    `quilt delete NAME`: (DIR, quilt's env, its tree)."""
    exported, env, checkout = to_quilt(root, base, tmp_path)
    quilt(checkout, env, "push", into)
    quilt(checkout, env, "fold", stdin=(exported / name).read_bytes())
    quilt(checkout, env, "refresh")
    quilt(checkout, env, "delete", name)
    return exported, env, checkout


KEPT_D = ["a.py: line18 fixed", "a.py: re:^line17$"]


def test_a_fix_folded_in_quilt_gives_its_keeps_line_to_the_fix_holding_its_change(stack,
                                                                                  tmp_path):
    """fix-d (a.py line18) carries a check, a Drop-When and a Bug link; quilt folds it into
    fix-a and deletes it. The import names the fold and, with --delete, fix-a takes fix-d's
    Keeps and Bug lines; its Drop-When, which would hold for fix-a's own change too, is said,
    not carried. The check stays through a later `quilt refresh` of fix-a, whose file in
    quilt never had it."""
    root, base = stack
    with_header_lines(root, "fix-d.patch", "Keeps: a.py: line18 fixed",
                      "Keeps: a.py: re:^line17$", "Drop-When: vllm>=9.0",
                      "Bug: https://example.com/issues/18")
    ok(root, "overlays")
    exported, env, checkout = folded(root, base, tmp_path, "fix-d.patch", "fix-a.patch")
    series = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and "fix-d.patch (its change is in fix-a.patch now: quilt fold?)" in \
        run.err, run.text
    assert tree_bytes(root / "series") == series
    run = ok(root, "import", "quilt", str(exported), "--update", "--delete")
    assert "deleted up/fix-d.patch (kept as series/up/deleted/fix-d.patch)" in run.out, run.text
    assert "folded up/fix-d.patch into up/fix-a.patch: carried `Keeps: a.py: line18 fixed`; " \
        "`Keeps: a.py: re:^line17$`; `Bug: https://example.com/issues/18`" in run.out, run.text
    assert "fix-d.patch's `Drop-When: vllm>=9.0` not carried into fix-a.patch" in run.err, \
        run.text
    fix_a = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert fix_a.get_all("Keeps") == KEPT_D, fix_a.to_bytes()
    assert fix_a.get_all("Bug") == ["https://example.com/issues/18"], fix_a.to_bytes()
    assert fix_a.get("Drop-When") is None
    assert b"+line18 fixed" in fix_a.diff and b"+line3 fixed" in fix_a.diff
    assert (root / "series/up/series").read_text().split() == ["fix-a.patch", "fix-b.patch"]
    ok(root, "overlays")
    assert ok(root, "status").rc == 0 and lint_errors(root) == []

    # quilt's fix-a.patch is the one quilt refreshed, without the check: changed again there
    # (line5), it is taken back with the check kept.
    work = checkout / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"line5 quilt\n"))
    quilt(checkout, env, "refresh")
    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/fix-a.patch" in run.out, run.text
    fix_a = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert fix_a.get_all("Keeps") == KEPT_D, fix_a.to_bytes()
    assert fix_a.get_all("Bug") == ["https://example.com/issues/18"], fix_a.to_bytes()
    assert b"+line5 quilt" in fix_a.diff
    # And once more: what the record says of the check goes on from take to take.
    work.write_bytes(work.read_bytes().replace(b"line6\n", b"line6 quilt\n"))
    quilt(checkout, env, "refresh")
    ok(root, "import", "quilt", str(exported), "--update")
    fix_a = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert fix_a.get_all("Keeps") == KEPT_D, fix_a.to_bytes()
    ok(root, "overlays")
    assert ok(root, "status").rc == 0 and lint_errors(root) == []


def test_a_fold_whose_check_quilt_already_has_carries_nothing_twice(stack, tmp_path):
    """quilt's user wrote fix-d's check into fix-a's header themselves (`quilt header -e`,
    here its file): the check is there once."""
    root, base = stack
    with_header_lines(root, "fix-d.patch", "Keeps: a.py: line18 fixed")
    exported, env, checkout = folded(root, base, tmp_path, "fix-d.patch", "fix-a.patch")
    mine = exported / "fix-a.patch"
    text = mine.read_text()
    at = text.index("Last-Update:")
    mine.write_text(text[:at] + "Keeps:  a.py: line18 fixed\n" + text[at:])
    run = ok(root, "import", "quilt", str(exported), "--update", "--delete")
    assert "no Keeps or Bug line of fix-d.patch's that fix-a.patch lacks" in run.out, run.text
    fix_a = parse_patch_file((root / "series/up/fix-a.patch").read_bytes(), "fix-a.patch")
    assert len(fix_a.get_all("Keeps")) == 1, fix_a.to_bytes()


def test_a_fix_folded_into_one_of_other_profiles_is_refused(stack, tmp_path):
    """fix-b is for gfx942 only; folded into fix-a, for every profile, its change would reach
    gfx950 with every check green. Refused with or without --delete, nothing written."""
    root, base = stack
    exported, _, _ = folded(root, base, tmp_path, "fix-b.patch", "fix-a.patch")
    series = tree_bytes(root / "series")
    for extra in ([], ["--delete"]):
        run = run_cli(root, "import", "quilt", str(exported), "--update", *extra)
        assert run.rc == 2, run.text
        assert "fix-b.patch's change is in fix-a.patch now (quilt fold?), but fix-b.patch is " \
            "for gfx942 only and fix-a.patch for every profile: taken back, that change would " \
            "reach gfx950" in run.err, run.text
        assert "`patchforge delete fix-b`" in run.err, run.text
        assert tree_bytes(root / "series") == series
