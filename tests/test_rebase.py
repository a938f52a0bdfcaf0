"""`patchforge rebase` on real git histories: an upstream repository built here, a project that
pins it through `upstream add --git`, patch files written here, and the real command line.

Every scenario of the rebase contract: clean, offset, fuzz (3-way merge), an upstream rename,
conflict -> --continue / --skip / --abort, landed patches dropped to upstreamed/, a file deleted
upstream, a second rebase refused, --dry-run, several upstreams, and the write-out that changes
upstream.lock, series and overlays together.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from helpers.cli import run_cli
from helpers.git import git
from helpers.project import Stack, make_project
from helpers.snapshot import snapshot
from helpers.upstream import BASE, BASE_LINES, Upstream, with_lines
from patchforge.formats.schemas import validation_errors

@pytest.fixture
def stack(tmp_path):
    return Stack(tmp_path / "project")


@pytest.fixture
def upstream(tmp_path):
    return Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n",
                                      "README": b"upstream\n"})


def header_of(data: bytes) -> bytes:
    return data.split(b"\n---\n", 1)[0]


def hunk_bodies(data: bytes) -> list[bytes]:
    """The diff's lines without `index`/`@@` lines: what the patch changes, not where."""
    diff = data.split(b"\n---\n", 1)[1]
    return [line for line in diff.split(b"\n")
            if not line.startswith((b"index ", b"@@"))]


def apply_with_git(upstream: Upstream, rev: str, patch: bytes) -> dict[str, bytes]:
    """Apply a patch file with `git apply` on a checkout of `rev`: the files it touches."""
    git(upstream.path, "checkout", "-q", rev)
    try:
        subprocess.run(["git", "apply", "--index", "-"], cwd=upstream.path, input=patch,
                       check=True, capture_output=True)
        names = git(upstream.path, "diff", "--cached", "--name-only").split()
        contents = {n: (upstream.path / n).read_bytes() for n in names
                    if (upstream.path / n).exists()}
        git(upstream.path, "reset", "-q", "--hard")
    finally:
        git(upstream.path, "checkout", "-q", "main")
    return contents


# ------------------------------------------------------------------------------------------------
# Clean, offset, fuzz, rename


def test_clean_patch_changes_only_base(stack, upstream):
    stack.add_upstream("up", upstream)
    old = stack.add_patch("up", "fix-f3", {"pkg/mod.py": with_lines({3: b"def f3():\n    return -3\n\n"})})
    new_commit = upstream.commit({"pkg/other.py": b"x = 2\n"}, "unrelated change")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [(p["name"], p["action"]) for p in summary["patches"]] == [("fix-f3.patch", "clean")]
    new = stack.patch("up", "fix-f3")
    assert new == old.replace(upstream.base.encode(), new_commit.encode())
    assert stack.lock()["upstreams"]["up"]["commit"] == new_commit
    assert summary["written"] is True and summary["upstreams"]["up"]["to_commit"] == new_commit
    assert not (stack.root / ".patchforge" / "rebase").exists()


def _loaded_by_a_clean_rebase(stack, upstream, modules: tuple[str, ...], *flags: str) -> str:
    """Which of `modules` a process running `rebase --to up=1.1` (a release, no stop, no
    overlays) has loaded, and its exit code: "LOADED [...] rc" (`flags` go to the interpreter)."""
    return _after_a_clean_rebase(
        stack, upstream, "", f"print('LOADED', [m for m in {modules!r} if m in sys.modules], rc)\n",
        *flags)


def _after_a_clean_rebase(stack, upstream, before: str, after: str, *flags: str,
                          fix: bytes = b"def f3():\n    return -3\n\n",
                          change: dict[str, bytes] | None = None, to: str = "1.1") -> str:
    """The output of a process running `before` (Python), then `rebase --to up=<to>` (a release
    of a Python file, no stop, no overlays) with its exit code in `rc`, then `after`. The fix
    makes f3 of pkg/mod.py `fix`; the release (tagged v1.1, named `to`) makes `change` (else
    a line of pkg/other.py)."""
    from helpers.env import REPO_ROOT

    stack.add_upstream("up", upstream)
    stack.add_patch("up", "fix-f3", {"pkg/mod.py": with_lines({3: fix})})
    new_commit = upstream.commit(change or {"pkg/other.py": b"x = 2\n"}, "unrelated change",
                                 tag="v1.1")
    code = (f"import sys\n{before}from patchforge.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n" + after)
    run = subprocess.run([sys.executable, *flags, "-c", code, "--root", str(stack.root),
                          "rebase", "--to", f"up={to}"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert stack.lock()["upstreams"]["up"]["commit"] == new_commit, run.stdout + run.stderr
    return run.stdout + run.stderr


def test_a_clean_rebase_to_a_release_loads_only_what_it_uses(stack, upstream):
    """`rebase --to up=1.1` that goes through imports neither packaging (a release of digits
    and dots is a PEP 440 version as it is), nor the editing worktree's module (no stop made
    one), nor status's command module, nor click (the command line is read by `cli.direct`),
    nor the overlays' module (a project without overlays/ only has it asked whether
    overlays/ is a link), nor where the history made a landing's change (history_place: no
    fix landed), nor the changes of a hunk landed in part (apply.parts: every hunk applies),
    nor the wheel and directory upstream kinds (store.sources: the upstream is a git one):
    start-up every such rebase paid for nothing."""
    assert "LOADED [] 0" in _loaded_by_a_clean_rebase(
        stack, upstream, ("packaging", "patchforge.worktree", "patchforge.cli.cmd_status",
                          "click", "patchforge.overlay", "patchforge.history_place",
                          "patchforge.apply.parts", "patchforge.store.sources"))


def test_a_clean_rebase_reads_the_configuration_without_importlib_resources(stack, upstream):
    """The configuration's schema (hashed for the marker of a configuration that passed) is read
    by the package's loader: a clean rebase loads neither `importlib.resources` nor the zipfile
    module it brings (5-6 ms of every command that reads a configuration), nor `importlib.util`
    (only a wheel download asks whether pip is there). Run without the site hooks (`-S`), which
    may load these themselves (a `.pth` importing certifi does)."""
    assert "LOADED [] 0" in _loaded_by_a_clean_rebase(
        stack, upstream, ("importlib.resources", "zipfile", "importlib.util"), "-S")


def test_a_clean_rebase_reads_a_plain_configuration_without_tomllib(stack, upstream):
    """A configuration of tables and strings, as `init` and `upstream add` write it, is read by
    formats.config.plain_toml: a clean rebase loads neither tomllib nor the `datetime` and
    `string` modules it brings (about 5% of a 30-patch rebase's instructions). Run without the
    site hooks (`-S`), which may load these themselves."""
    assert "LOADED [] 0" in _loaded_by_a_clean_rebase(
        stack, upstream, ("tomllib", "datetime", "string"), "-S")


def test_a_clean_rebase_loads_neither_tempfile_nor_shutil(stack, upstream):
    """A clean rebase makes its temporary files, directories and removals with
    patchforge.tempfiles: `tempfile` would load `shutil` and `random`, and `shutil` loads
    `bz2` and `lzma` (6-9 ms of every command's start in a virtual environment); `glob` and
    `base64` are loaded only where a kept copy is looked up or a journal holds base64. Run
    without the site hooks (`-S`), which may load these themselves (a `.pth` importing
    certifi does)."""
    assert "LOADED [] 0" in _loaded_by_a_clean_rebase(
        stack, upstream, ("tempfile", "shutil", "bz2", "lzma", "random", "glob", "base64"),
        "-S")


def test_a_clean_rebase_names_its_patch_files_without_a_path_per_patch(stack, upstream):
    """The patch files' paths from the root (the line-end check's names, the write-out's plan,
    the range-diff's originals) are made as text once per patch (Project.patch_rel): no Path
    made relative per patch and step, a per-patch cost of a long series' rebase of its own.
    The rebase writes the same files as before (the series, the moved patch)."""
    before = ("import pathlib\n"
              "relative = []\n"
              "_relative_to = pathlib.PurePath.relative_to\n"
              "def counted(self, *args, **kwargs):\n"
              "    relative.append(str(self))\n"
              "    return _relative_to(self, *args, **kwargs)\n"
              "pathlib.PurePath.relative_to = counted\n")
    out = _after_a_clean_rebase(
        stack, upstream, before,
        "print('RELATIVE', [p for p in relative if p.endswith('.patch')], rc)\n")
    assert "RELATIVE [] 0" in out, out
    patch = (stack.root / "series" / "up" / "fix-f3.patch").read_bytes()
    assert b"\n+    return -3\n" in patch and b"Base:" in patch


def test_a_clean_rebase_of_python_files_compiles_no_pattern_it_does_not_use(stack, upstream):
    """Patterns only some inputs need are compiled at their first use (patchforge.patterns):
    a clean rebase of a Python file compiles neither the C-family function patterns, nor
    those of a revert's commit message, nor the lock's image pin patterns (49 patterns, about
    3% of a 30-patch rebase's instructions were compiled and never used), nor those of a
    merge's conflict markers, an overlong number, an HTML entity, a kept file of loose code,
    a history diff's added and removed lines, or git's own range-diff output (12 more, 3.7
    million instructions at every rebase's start)."""
    before = ("import re\ncompiled = []\n_compile = re.compile\n"
              "def recording(pattern, flags=0):\n"
              "    compiled.append(pattern if isinstance(pattern, bytes) else pattern.encode())\n"
              "    return _compile(pattern, flags)\n"
              "re.compile = recording\n")
    unused = (b"namespace|class|struct|union", b"This reverts commit", b"sha256:[0-9a-f]{64}",
              rb"(?:<{7}|>{7}|\|{7})", rb">{7}(?: |\r?\n|$)", b"[0-9]{4301}",
              b"&(?:#[0-9]{1,7}", rb"([0-9]+) ([^\n]+)\n", rb"\n\+([^\n]*)", rb"\n-([^\n]*)",
              rb"[!#-\[\]-~]+\Z", b" {0,2}([0-9]+|-):  ")
    after = (f"print('COMPILED', [u for u in {unused!r} if any(u in p for p in compiled)], "
             "len(compiled) > 0, rc)\n")
    assert "COMPILED [] True 0" in _after_a_clean_rebase(stack, upstream, before, after)


def test_a_fix_adding_lines_is_placed_in_its_function_without_difflib(stack, upstream):
    """A fix that only adds lines, carried into a file the release changed elsewhere, has
    the function check's places of its change read off its hunks without a line diff
    (apply.hunks._changed_places: one side empty is one block): the rebase loads no
    difflib, which with heapq was 3.8 million instructions of a 30-patch rebase. Run without
    the site hooks (`-S`), which may load it themselves."""
    out = _after_a_clean_rebase(
        stack, upstream, "", "print('LOADED', [m for m in ('difflib',) if m in sys.modules], rc)\n",
        "-S", to="v1.1", fix=b"def f3():\n    check()\n    return 3\n\n",
        change={"pkg/mod.py": with_lines({20: b"def f20():\n    return -20\n\n"})})
    assert "LOADED [] 0" in out


def test_a_rebase_dropping_a_landed_fix_keeps_it_without_loading_the_kept_fixes_judge(
        stack, upstream):
    """A fix the release landed is set aside under upstreamed/ in the form its landing made
    it (landings.landed_diff), which a clean rebase asks of every landed fix: that does not
    load reverts.py, the judge of the fixes kept there (91 KB of source, about 0.4% of a
    clean 30-patch rebase's instructions), whose rules a later `status` asks. The fix is kept, naming its landing."""
    fix = b"def f3():\n    return -3\n\n"
    out = _after_a_clean_rebase(
        stack, upstream, "",
        "print('LOADED', [m for m in ('patchforge.reverts',) if m in sys.modules], rc)\n",
        fix=fix, change={"pkg/mod.py": with_lines({3: fix})})
    assert "LOADED [] 0" in out
    kept = stack.root / "series" / "up" / "upstreamed" / "fix-f3.patch"
    landing = git(upstream.path, "rev-parse", "v1.1").strip()
    assert f"commit:{landing}".encode() in kept.read_bytes(), out
    assert not (stack.root / "series" / "up" / "fix-f3.patch").exists()


def test_a_landed_fix_set_aside_has_its_free_name_found_once(stack, upstream):
    """The name a landed fix is kept under in upstreamed/ (its own, or a numbered one beside
    an earlier, different fix of that name) is found once, by the write-out's plan: the
    summary names the same file without looking at the directory again (a link check, a
    lookup and a read of the file just written, per fix set aside)."""
    fix = b"def f3():\n    return -3\n\n"
    before = ("import patchforge.stack as stack_module\n"
              "asked = []\n"
              "_aside_name = stack_module.aside_name\n"
              "def counted(directory, name, *args, **kwargs):\n"
              "    asked.append(name)\n"
              "    return _aside_name(directory, name, *args, **kwargs)\n"
              "stack_module.aside_name = counted\n")
    out = _after_a_clean_rebase(stack, upstream, before, "print('ASKED', asked, rc)\n",
                                fix=fix, change={"pkg/mod.py": with_lines({3: fix})})
    assert "ASKED ['fix-f3.patch'] 0" in out, out
    assert (stack.root / "series" / "up" / "upstreamed" / "fix-f3.patch").exists()
    assert not (stack.root / "series" / "up" / "fix-f3.patch").exists()


def test_the_doubling_checks_diff_a_fix_and_upstreams_file_once(stack, upstream):
    """A moved fix on a file upstream changed has its result read by the doubling check's item
    and key checks (an item twice in its list, a key twice in its dict), which both ask where
    the result differs from upstream's file: the line diff of the two (difflib, in Python) is
    made once by the judge, for both, and the fix moves as before."""
    fix = (b'ARCHS = [\n    "gfx90a",\n    "gfx1201",\n]\n'
           b'SIZES = {\n    "gfx90a": 16,\n    "gfx1201": 32,\n}\n\n')
    before = ("import difflib, sys\n"
              "diffed = []\n"
              "class Counted(difflib.SequenceMatcher):\n"
              "    def __init__(self, isjunk=None, a='', b='', autojunk=True):\n"
              "        if sys._getframe(1).f_code.co_filename.endswith('judge.py'):\n"
              "            diffed.append((tuple(a), tuple(b)))\n"
              "        super().__init__(isjunk, a, b, autojunk)\n"
              "difflib.SequenceMatcher = Counted\n")
    after = ("again = [pair for n, pair in enumerate(diffed) if pair in diffed[:n]]\n"
             "print('DIFFED', len(diffed) > 0, 'AGAIN', len(again), rc)\n")
    release = with_lines({20: b"def f20():\n    return -20\n\n"})
    out = _after_a_clean_rebase(stack, upstream, before, after, fix=fix,
                                change={"pkg/mod.py": release})
    assert "DIFFED True AGAIN 0 0" in out, out
    assert apply_with_git(upstream, upstream.head(), stack.patch("up", "fix-f3"))["pkg/mod.py"] \
        == with_lines({3: fix, 20: b"def f20():\n    return -20\n\n"})


def test_the_key_check_reads_no_dict_of_a_fix_that_opens_no_key(stack, upstream):
    """The key check (a key the fix gives a dict, there twice) asks only about entries opening
    on the lines the fix changed: a moved fix whose changed lines open no key (here two
    returns, a dict of upstream's between them) has none, and the whole file's dict literals
    are not read for it; the fix moves as before."""
    from helpers.env import REPO_ROOT

    table = b'TABLE = {\n    "gfx90a": 16,\n}\n\n'
    upstream.commit({"pkg/mod.py": with_lines({4: table})}, "a table")
    stack.add_upstream("up", upstream, at=upstream.head())
    fixed = with_lines({3: b"def f3():\n    return -3\n\n", 4: table,
                        5: b"def f5():\n    return -5\n\n"})
    stack.add_patch("up", "fix", {"pkg/mod.py": fixed})
    release = upstream.commit({"pkg/mod.py": with_lines({4: table, 20: b"def f20():\n"
                                                         b"    return -20\n\n"})},
                              "unrelated change", tag="v1.1")
    code = ("import sys\nimport patchforge.judge as judge\nread = []\n"
            "entries = judge._dict_entries\n"
            "def counted(lines, syntax):\n    read.append(len(lines))\n"
            "    return entries(lines, syntax)\n"
            "judge._dict_entries = counted\n"
            "from patchforge.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
            "print('READ', read, rc)\n")
    run = subprocess.run([sys.executable, "-c", code, "--root", str(stack.root), "rebase",
                          "--to", "up=1.1"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert "READ [] 0" in run.stdout, run.stdout + run.stderr
    assert stack.lock()["upstreams"]["up"]["commit"] == release
    assert apply_with_git(upstream, release, stack.patch("up", "fix"))["pkg/mod.py"] == \
        with_lines({3: b"def f3():\n    return -3\n\n", 4: table,
                    5: b"def f5():\n    return -5\n\n",
                    20: b"def f20():\n    return -20\n\n"})


def test_offset_patch_gets_new_line_numbers(stack, upstream):
    stack.add_upstream("up", upstream)
    fixed = b"def f20():\n    return -20\n\n"
    old = stack.add_patch("up", "fix-f20", {"pkg/mod.py": with_lines({20: fixed})})
    moved = b"# a new header comment\n# spanning three\n# lines\n" + BASE
    new_commit = upstream.commit({"pkg/mod.py": moved}, "header comment")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["offset"]
    new = stack.patch("up", "fix-f20")
    assert header_of(new) == header_of(old).replace(upstream.base.encode(), new_commit.encode())
    assert hunk_bodies(new) == hunk_bodies(old)
    assert new != old.replace(upstream.base.encode(), new_commit.encode())  # @@ lines moved
    assert apply_with_git(upstream, new_commit, new)["pkg/mod.py"] == \
        moved.replace(BASE_LINES[20], fixed)
    # range-diff: the same change on both sides (line numbers do not count).
    assert re.fullmatch(r"up:\n1:  [0-9a-f]+ = 1:  [0-9a-f]+ fix-f20.patch\n", summary["range_diff"])


@pytest.mark.parametrize("note", [
    b"The other.py half is needed on gfx942 hosts only.\n",
    b"*** NOTE: the other.py half is for gfx942 only ***\n",
    b"The other.py half:\n---\nneeded on gfx942 only.\n"])
def test_an_offset_patch_keeps_the_words_between_its_file_sections(stack, upstream, note):
    """A note written between a patch's two file sections (as people write into a plain
    .diff; git apply and GNU patch pass over it) was gone after a rebase that made the diff
    again, exit 0, nothing said. It now ends the description, as `refresh` puts it, and the
    rebase says so; the patch still applies with `git apply`. A note line a patch tool would
    read as part of a diff (`*** ...`, a `---` rule) is kept quoted (`> `): taken as it was, it
    failed the rebase (exit 2, the rebase left in progress)."""
    stack.add_upstream("up", upstream)
    fixed = b"def f20():\n    return -20\n\n"
    stack.add_patch("up", "two", {"pkg/mod.py": with_lines({20: fixed}),
                                  "pkg/other.py": b"x = 2\n"})
    path = stack.root / "series" / "up" / "two.patch"
    data = path.read_bytes()
    at = data.index(b"diff --git a/pkg/other.py")
    path.write_bytes(data[:at] + note + b"\n" + data[at:])
    moved = b"# a new header comment\n# spanning three\n# lines\n" + BASE
    new_commit = upstream.commit({"pkg/mod.py": moved}, "header comment")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    (result,) = summary["patches"]
    assert result["action"] == "offset"
    assert "the words between its diff's file sections (line " in result["detail"], result
    new = stack.patch("up", "two")
    head = new[:new.index(b"\n---\n")]
    for line in note.splitlines():
        assert line in head, new
    assert apply_with_git(upstream, new_commit, new)["pkg/other.py"] == b"x = 2\n"


def test_fuzz_goes_through_the_three_way_merge(stack, upstream):
    stack.add_upstream("up", upstream)
    fixed = b"def f10():\n    return -10\n\n"
    old = stack.add_patch("up", "fix-f10", {"pkg/mod.py": with_lines({10: fixed})})
    # Upstream changes the context right next to the hunk: the patch only applies with fuzz.
    theirs = with_lines({9: b"def f9():\n    return 9  # upstream\n\n"})
    new_commit = upstream.commit({"pkg/mod.py": theirs}, "touch f9")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["merged"]
    new = stack.patch("up", "fix-f10")
    assert header_of(new) == header_of(old).replace(upstream.base.encode(), new_commit.encode())
    result = apply_with_git(upstream, new_commit, new)["pkg/mod.py"]
    assert result == theirs.replace(BASE_LINES[10], fixed)
    # git apply takes the new patch with no fuzz at all: its context is the new upstream's.
    subprocess.run(["git", "apply", "--check", "-C3", "-"], cwd=upstream.path, input=new,
                   check=True)


def test_a_patch_after_a_merged_one_is_diffed_on_the_merge(stack, upstream):
    """The walk remembers each file patch's application by content: landed detection's on the
    target (fuzz) and the old series' on the base (exact) are two applications, and the next
    patch of the file meets the merged content, not the old series', so its diff is made again
    on the target (its `index` line names the merged file)."""
    stack.add_upstream("up", upstream)
    fixed = b"def f10():\n    return -10\n\n"
    stack.add_patch("up", "fix-f10", {"pkg/mod.py": with_lines({10: fixed})})
    stack.add_patch("up", "fix-f20", {"pkg/mod.py": with_lines({20: b"def f20():\n    pass\n\n"})})
    theirs = with_lines({9: b"def f9():\n    return 9  # upstream\n\n"})
    new_commit = upstream.commit({"pkg/mod.py": theirs}, "touch f9")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["merged", "clean"]
    merged = apply_with_git(upstream, new_commit, stack.patch("up", "fix-f10"))["pkg/mod.py"]
    assert merged == theirs.replace(BASE_LINES[10], fixed)
    final = merged.replace(BASE_LINES[20], b"def f20():\n    pass\n\n")

    def blob(data):
        return subprocess.run(["git", "hash-object", "--stdin"], input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    assert f"\nindex {blob(merged)}..{blob(final)} 100644\n".encode() in \
        stack.patch("up", "fix-f20")


def test_fix_follows_a_file_renamed_upstream(stack, upstream):
    stack.add_upstream("up", upstream)
    fixed = b"def f5():\n    return -5\n\n"
    stack.add_patch("up", "fix-f5", {"pkg/mod.py": with_lines({5: fixed})})
    new_commit = upstream.commit({}, "move mod", renames={"pkg/mod.py": "pkg/core/mod.py"})
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["clean"]
    assert "pkg/mod.py -> pkg/core/mod.py" in summary["patches"][0]["detail"]
    new = stack.patch("up", "fix-f5")
    assert b"diff --git a/pkg/core/mod.py b/pkg/core/mod.py" in new
    assert b"a/pkg/mod.py" not in new
    assert apply_with_git(upstream, new_commit, new) == {"pkg/core/mod.py": with_lines({5: fixed})}


def test_a_rebase_runs_its_range_diff_in_the_caches_repository_and_leaves_it_empty(
        stack, upstream, tmp_path, monkeypatch):
    """The range-diff's scratch repository is kept in the cache beside the store: a rebase
    makes no directory for it in the temporary directory (a repository made and removed per
    run cost the disk a wait for each of its directories), leaves it as it was made with
    nothing of the run in it, and the next rebase takes it again; the range-diff's text is
    the one a repository of its own gives."""
    import tempfile

    from patchforge.store.gitstore import cache_dir
    from patchforge.store.rangediff import KEPT_REPOSITORY

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "landed", {"pkg/mod.py": with_lines({7: b"def f7():\n    return 77\n\n"})})
    stack.add_patch("up", "far", {"pkg/mod.py": with_lines({25: b"def f25():\n    return -25\n\n"})})
    middle = upstream.commit({"pkg/mod.py": with_lines({7: b"def f7():\n    return 77\n\n"})},
                             "the fix")
    last = upstream.commit({"pkg/mod.py": with_lines({7: b"def f7():\n    return 77\n\n",
                                                      11: b"def f11():\n    return 11\n\n"})},
                           "upstream work")
    copy = stack.root.parent / "copy"
    shutil.copytree(stack.root, copy, symlinks=True)
    kept = cache_dir() / KEPT_REPOSITORY
    texts = []
    for target in (middle, last):
        real = stack.rebase_json("--to", f"up={target}")
        texts.append(real["range_diff"])
        assert "far.patch" in real["range_diff"]
        assert sorted(os.listdir(kept)) == ["HEAD", "config", "lock", "objects", "refs"]
        assert not os.listdir(kept / "objects" / "pack") and not os.listdir(kept / "refs")
        assert not [name for name in os.listdir(temporary) if "rangediff" in name]
    # With the cache's repository held by another run, the rebase makes its own: the same text.
    import fcntl

    fd = os.open(kept / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result = run_cli(copy, "rebase", "--to", f"up={middle}", "--json")
    finally:
        os.close(fd)
    assert result.rc == 0, result.err
    assert json.loads(result.out)["range_diff"] == texts[0]
    assert not [name for name in os.listdir(temporary) if "rangediff" in name]


def test_range_diff_from_the_run_equals_the_one_from_the_patch_files(stack, upstream,
                                                                      monkeypatch):
    """The range-diff chains a run records as it goes (what each patch changed) give the same
    git objects, so the same text, as applying the old and new patch files again, which is
    what a resumed run does: landed, clean, offset, merged and renamed-file patches."""
    from patchforge.rebase import engine

    stack.add_upstream("up", upstream)
    stack.add_patch("up", "landed", {"pkg/mod.py": with_lines({7: b"def f7():\n    return 77\n\n"})})
    stack.add_patch("up", "near", {"pkg/mod.py": with_lines({12: b"def f12():\n    return -12\n\n"})})
    stack.add_patch("up", "far", {"pkg/mod.py": with_lines({25: b"def f25():\n    return -25\n\n"})})
    stack.add_patch("up", "other", {"pkg/other.py": b"x = 2\n", "pkg/new.py": b"n = 1\n"})
    upstream.commit({"pkg/mod.py": with_lines({7: b"def f7():\n    return 77\n\n",
                                               11: b"def f11():\n    return 'eleven'\n\n"})},
                    "upstream work")
    new_commit = upstream.commit({}, "move other", renames={"pkg/other.py": "pkg/sub/other.py"})
    copy = stack.root.parent / "copy"
    shutil.copytree(stack.root, copy, symlinks=True)
    recorded = stack.rebase_json("--to", f"up={new_commit}")
    assert {p["action"] for p in recorded["patches"]} >= {"dropped", "clean"}
    original = engine.Rebase._range_diff_inputs

    def without_recorded_chains(self, **options):
        self._chains.clear()
        return original(self, **options)
    monkeypatch.setattr(engine.Rebase, "_range_diff_inputs", without_recorded_chains)
    result = run_cli(copy, "rebase", "--to", f"up={new_commit}", "--json")
    assert result.rc == 0, result.err
    applied = json.loads(result.out)
    assert applied["range_diff"] == recorded["range_diff"]
    assert "landed.patch" in recorded["range_diff"] and "other.patch" in recorded["range_diff"]


def _watch_range_diff_git(monkeypatch):
    """Lists that fill as a rebase starts `git range-diff` (one entry per start) and as it
    diffs pairs in one git process (the number of pairs of each batch)."""
    from patchforge.store import rangediff
    from patchforge.store import diff as store_diff

    started, batches = [], []
    real_start, real_batch = rangediff.RangeDiffImport._start_git, store_diff._GitHunks.__init__

    def start_git(self):
        started.append(self)
        return real_start(self)

    def batch(self, pairs):
        batches.append(len(pairs))
        return real_batch(self, pairs)
    monkeypatch.setattr(rangediff.RangeDiffImport, "_start_git", start_git)
    monkeypatch.setattr(store_diff._GitHunks, "__init__", batch)
    return started, batches


def test_a_clean_rebase_writes_gits_range_diff_without_running_it(stack, upstream,
                                                                  monkeypatch):
    """A clean rebase whose every moved patch is an exact pair of its old one prints the
    range-diff without `git range-diff`: a patch the release left alone, two that moved with
    an offset (their old contents diffed by the run's new diffs' own git process, no process
    more), one landed. The text is the one `git range-diff` gives reading the chains,
    byte for byte."""
    from patchforge.store import rangediff

    stack.add_upstream("up", upstream)
    landed = b"def f7():\n    return 77\n\n"
    stack.add_patch("up", "landed", {"pkg/mod.py": with_lines({7: landed})})
    stack.add_patch("up", "near", {"pkg/mod.py": with_lines({12: b"def f12():\n    return -12\n\n"})})
    stack.add_patch("up", "other", {"pkg/other.py": b"x = 2\n"})
    stack.add_patch("up", "far", {"pkg/mod.py": with_lines({25: b"def f25():\n    return -25\n\n"})})
    new_commit = upstream.commit(
        {"pkg/mod.py": b"# a header\n# of two lines\n" + with_lines({7: landed})}, "release")
    copy = stack.root.parent / "copy"
    shutil.copytree(stack.root, copy, symlinks=True)
    started, batches = _watch_range_diff_git(monkeypatch)
    written = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in written["patches"]] == ["dropped", "offset", "clean", "offset"]
    assert not started and batches == [4]  # two new diffs, two old pairs: one git process
    monkeypatch.setattr(rangediff, "_written_text", lambda *args: None)
    result = run_cli(copy, "rebase", "--to", f"up={new_commit}", "--json")
    assert result.rc == 0, result.err
    assert started and json.loads(result.out)["range_diff"] == written["range_diff"]
    assert re.findall(r" ([=<]) ", written["range_diff"]) == ["<", "=", "=", "="]


def test_a_moved_pair_whose_function_line_changed_is_shown_changed_by_git_alone(
        stack, upstream, monkeypatch):
    """Two patches moved by an offset; upstream renamed the function above one's hunk, so
    git's new diff of it has another heading and `git range-diff` shows the pair changed
    (`!`). The other pair is shown exact by git's diffs of both pairs of contents (the old
    ones diffed by the run's new diffs' process), the changed pair is git's whatever the
    other costs, and git's range-diff runs on that pair alone, not on the whole chains. The
    text is git's, byte for byte."""
    from patchforge.store import rangediff

    stack.add_upstream("up", upstream)
    stack.add_patch("up", "near", {"pkg/mod.py": with_lines({12: b"def f12():\n    return -12\n\n"})})
    stack.add_patch("up", "renamed", {"pkg/mod.py": with_lines({20: b"def f20():\n    return -20\n\n"})})
    new_commit = upstream.commit({"pkg/mod.py": b"# a header\n# of two lines\n" + with_lines(
        {19: b"def g19():\n    return 19\n\n"})}, "release")
    copy = stack.root.parent / "copy"
    shutil.copytree(stack.root, copy, symlinks=True)
    started, batches = _watch_range_diff_git(monkeypatch)
    alone = []
    real_alone = rangediff._Changed.start
    monkeypatch.setattr(rangediff._Changed, "start",
                        lambda self, *args: alone.append(self.pairs) or real_alone(self, *args))
    written = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in written["patches"]] == ["offset", "offset"]
    assert not started and batches == [4]  # the two new diffs and their two old pairs
    assert [[(a.name, b.name) for a, b in pairs] for pairs in alone] == \
        [[("renamed.patch", "renamed.patch")]]
    assert re.findall(r" ([=!]) ", written["range_diff"]) == ["=", "!"]
    assert "    -@@ pkg/mod.py: def f19():\n    +@@ pkg/mod.py: def g19():\n" in \
        written["range_diff"]
    # git's own range-diff of the two chains, nothing written or standing in
    monkeypatch.setattr(rangediff, "_written_text", lambda *args: None)
    monkeypatch.setattr(rangediff, "_stand_ins", lambda *args: {})
    result = run_cli(copy, "rebase", "--to", f"up={new_commit}", "--json")
    assert result.rc == 0, result.err
    assert json.loads(result.out)["range_diff"] == written["range_diff"]


def test_a_failing_range_diff_import_does_not_fail_the_rebase(stack, upstream, monkeypatch):
    """The range-diff is a report: its import failing during the run makes the end of the
    run build it from the files instead, and git failing at the end leaves a note in its place;
    the rebase itself goes through either way."""
    from patchforge.errors import StoreError
    from patchforge.store import rangediff

    stack.add_upstream("up", upstream)
    stack.add_patch("up", "far", {"pkg/mod.py": with_lines({25: b"def f25():\n    return -25\n\n"})})
    new_commit = upstream.commit({"pkg/other.py": b"x = 9\n"}, "upstream work")
    copy, again = stack.root.parent / "copy", stack.root.parent / "again"
    shutil.copytree(stack.root, copy, symlinks=True)
    shutil.copytree(stack.root, again, symlinks=True)
    reference = stack.rebase_json("--to", f"up={new_commit}")

    def broken_pipe(self, data, made_from=None):
        raise StoreError("the range-diff import failed (test)")
    monkeypatch.setattr(rangediff.RangeDiffImport, "blob", broken_pipe)
    result = run_cli(copy, "rebase", "--to", f"up={new_commit}", "--json")
    assert result.rc == 0, result.err
    # Made again from the patch files, it is the same text (the same git objects).
    assert json.loads(result.out)["range_diff"] == reference["range_diff"]
    assert (copy / "series" / "up" / "far.patch").read_bytes() == stack.patch("up", "far")

    def failing(self, chains):
        self.close()
        raise StoreError("git range-diff failed: test")
    def cannot_start(self, store):
        raise StoreError("cannot make the range-diff's scratch repository: test")
    # Nor can the import even start (no room for its scratch repository): the same.
    monkeypatch.setattr(rangediff.RangeDiffImport, "__init__", cannot_start)
    monkeypatch.setattr(rangediff.RangeDiffImport, "range_diff", failing)
    result = run_cli(again, "rebase", "--to", f"up={new_commit}", "--json")
    assert result.rc == 0, result.err
    assert (again / "series" / "up" / "far.patch").read_bytes() == stack.patch("up", "far")
    assert json.loads(result.out)["range_diff"] == \
        "(no range-diff: cannot make the range-diff's scratch repository: test)\n"


# ------------------------------------------------------------------------------------------------
# Conflicts: --continue, --skip, --abort


def conflict_stack(stack, upstream):
    """Three patches; the middle one conflicts with an upstream change to f10. Overlays exist."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "first", {"pkg/mod.py": with_lines({2: b"def f2():\n    return -2\n\n"})})
    stack.add_patch("up", "middle", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    stack.add_patch("up", "last", {"pkg/other.py": b"x = 1\ny = 2\n"})
    stack.cli("overlays")
    assert (stack.root / "overlays" / "up" / "pkg" / "mod.py").exists()
    theirs = with_lines({10: b"def f10():\n    return 100\n\n"})
    return upstream.commit({"pkg/mod.py": theirs}, "f10 returns 100")


def test_verbose_prints_no_traceback_for_an_ordinary_outcome(stack, upstream):
    """`-v` printed a Python traceback under every ordinary error: a conflict stop (exit 3),
    a usage error, a refusal. Only an internal error gets one; the others say what they say
    without -v."""
    new_commit = conflict_stack(stack, upstream)
    for args, rc in ((["rebase", "--to", "nope=v1"], 2),
                     (["rebase", "--to", f"up={new_commit}"], 3),
                     (["rebase", "--to", f"up={new_commit}"], 2)):
        quiet = stack.cli(*args, expect=None)
        if rc == 3:  # the stop is made once; its words are the same with -v
            stack.cli("rebase", "--abort")
        verbose = stack.cli("-v", *args, expect=rc)
        assert "Traceback" not in verbose[2], (args, verbose[2])
        assert quiet[0] == rc and quiet[2].splitlines()[-1] in verbose[2], (args, quiet, verbose)


def test_verbose_prints_the_traceback_of_an_internal_error_and_only_of_it(tmp_path):
    """An internal error raised as a PatchforgeError (exit 70: the ledger given an event
    without a name, a caller's bug) lost its traceback under -v with the ordinary errors'.
    -v prints it for that error, and none for a user's error (an unknown patch, exit 2)."""
    script = tmp_path / "run.py"
    script.write_text(
        "import click\n"
        "from patchforge.cli import LAZY_COMMANDS, main\n"
        "@click.command()\n"
        "def broken():\n"
        "    from patchforge.ledger import record_event\n"
        "    record_event(None, {'event': ''})\n"
        "LAZY_COMMANDS['broken'] = ('__main__', 'broken', 'an internal error')\n"
        "main()\n")
    project = make_project(tmp_path / "project")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), "--root", str(project), *args],
                              capture_output=True, text=True, timeout=120)

    internal = run("-v", "broken")
    assert internal.returncode == 70, internal.stderr
    assert "patchforge: error: record_event: an event is a dict" in internal.stderr
    assert "Traceback (most recent call last):" in internal.stderr, internal.stderr
    assert "Traceback" not in run("broken").stderr  # without -v: the message alone
    user = run("-v", "show", "nope")
    assert user.returncode == 2 and "no patch named 'nope'" in user.stderr, user.stderr
    assert "Traceback" not in user.stderr, user.stderr


def test_conflict_stops_then_continue_takes_the_resolution(stack, upstream):
    new_commit = conflict_stack(stack, upstream)
    before = stack.snapshot()
    code, out, err = stack.cli("rebase", "--to", f"up={new_commit}", "--json", expect=3)
    document = json.loads(out)
    assert validation_errors(document, "rebase") == []
    assert document["stopped"]["name"] == "middle.patch"
    assert document["stopped"]["files"] == ["pkg/mod.py"]
    assert "pkg/mod.py" in err and "--continue" in err
    # Nothing in the project changed: lock, series and overlays move together at the end.
    assert stack.snapshot() == before
    work = stack.root / ".patchforge" / "work" / "up"
    conflicted = (work / "pkg" / "mod.py").read_bytes()
    assert b"<<<<<<< upstream" in conflicted and b">>>>>>> patch" in conflicted
    assert b"return -2" in conflicted  # the series so far is applied in the worktree
    # The stop's worktree holds the stopped patch's files, not the upstream's others; git there
    # shows the conflict as the one change.
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")
                  if p.is_file() and ".git" not in p.parts) == ["pkg/mod.py"]
    assert git(work, "diff", "--name-only").split() == ["pkg/mod.py"]
    # Conflict markers left in are refused, and nothing moves.
    code, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "conflict markers" in err
    assert stack.snapshot() == before
    resolved = with_lines({2: b"def f2():\n    return -2\n\n",
                           10: b"def f10():\n    return -100\n\n"})
    (work / "pkg" / "mod.py").write_bytes(resolved)
    # A file lying there that nobody made part of the patch is refused, never folded in.
    (work / "notes.txt").write_bytes(b"remember to test on MI300X\n")
    code, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "notes.txt" in err and "patchforge add" in err
    assert stack.snapshot() == before
    (work / "notes.txt").unlink()
    summary = stack.rebase_json("--continue")
    assert [(p["name"], p["action"]) for p in summary["patches"]] == [
        ("first.patch", "clean"), ("middle.patch", "resolved"), ("last.patch", "clean")]
    assert summary["counts"]["resolved"] == 1
    middle = stack.patch("up", "middle")
    assert b"-    return 100\n+    return -100\n" in middle
    assert f"Base: {new_commit}".encode() in middle
    # The new series applies in order on the new upstream, giving the resolution.
    first = apply_with_git(upstream, new_commit, stack.patch("up", "first"))
    assert first["pkg/mod.py"] == with_lines({2: b"def f2():\n    return -2\n\n",
                                              10: b"def f10():\n    return 100\n\n"})
    assert (stack.root / "overlays" / "up" / "pkg" / "mod.py").read_bytes() == resolved
    assert stack.lock()["upstreams"]["up"]["commit"] == new_commit
    assert not work.exists() and not (stack.root / ".patchforge" / "rebase").exists()
    stack.cli("overlays", "--check")  # overlays, manifest and sums agree with the new state
    assert "middle.patch" in summary["range_diff"] and "!" in summary["range_diff"]


def test_conflict_then_skip_keeps_the_patch_aside(stack, upstream):
    new_commit = conflict_stack(stack, upstream)
    original = stack.patch("up", "middle")
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    summary = stack.rebase_json("--skip", expect=1)
    assert [(p["name"], p["action"], p["destination"]) for p in summary["patches"]] == [
        ("first.patch", "clean", "series"), ("middle.patch", "skipped", "skipped"),
        ("last.patch", "clean", "series")]
    assert stack.series("up") == ["first.patch", "last.patch"]
    assert stack.patch("up", "middle", "skipped") == original
    assert not (stack.root / "series" / "up" / "middle.patch").exists()
    # Set aside is not done with: every check says so until it is brought back or deleted.
    _, _, err = stack.cli("overlays", "--check", expect=1)
    assert "middle.patch was set aside" in err and "bring-back middle" in err
    _, out, _ = stack.cli("status", "--json", expect=1)
    assert json.loads(out)["skipped"] == [{"upstream": "up", "name": "middle.patch",
                                           "path": "series/up/skipped/middle.patch"}]
    _, out, _ = stack.cli("lint", "--json", "--no-forge", expect=1)
    assert [f["check"] for f in json.loads(out)["findings"]] == ["skipped"]


@pytest.mark.parametrize("how", ["--skip", "--abort"])
def test_skip_and_abort_keep_the_files_made_in_the_worktree_that_nobody_added(stack, upstream,
                                                                              how):
    """`git rebase --skip` and `--abort` leave untracked files where they are; patchforge's
    stop worktree goes, and a file made there without `patchforge add` (notes, the start of a
    new module for the fix) went with it. It is now copied under .patchforge/left-behind/ first,
    byte for byte, and the command says where; the patch's own files are not among them (the
    resolution --abort keeps is kept apart: the test below)."""
    new_commit = conflict_stack(stack, upstream)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    work = stack.root / ".patchforge" / "work" / "up"
    (work / "pkg" / "helper.py").write_bytes(b"def helper():\r\n    return 1")
    (work / "notes.txt").write_bytes(b"\xff remember MI300X\n")
    # A link made there is kept as the link it is (it was dropped without a word), never
    # followed: its target, a directory outside, is not copied.
    os.symlink("/etc", work / "pkg" / "etc-link")
    (work / "pkg" / "mod.py").write_bytes(b"half resolved\n")
    _, _, err = stack.cli("rebase", how, expect=1 if how == "--skip" else 0)
    kept = stack.root / ".patchforge" / "left-behind" / "up-1"
    assert "3 files made in the worktree but not part of the fix" in err, err
    assert os.readlink(kept / "pkg" / "etc-link") == "/etc"
    assert ".patchforge/left-behind/up-1" in err
    assert (kept / "pkg" / "helper.py").read_bytes() == b"def helper():\r\n    return 1"
    assert (kept / "notes.txt").read_bytes() == b"\xff remember MI300X\n"
    assert not (kept / "pkg" / "mod.py").exists()
    assert not work.exists()


def test_abort_keeps_a_hand_resolution_and_says_where(stack, upstream):
    """`rebase --abort` typed for `--continue` threw away the resolution made in the stop's
    worktree without a word (only files nobody added were kept). The patch's files changed
    since the stop wrote them are now copied, byte for byte, under .patchforge/left-behind/,
    and the command says where and how to use them; an --abort with nothing changed keeps
    and says nothing. Copied back at the same stop, they make --continue's patch."""
    new_commit = conflict_stack(stack, upstream)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    _, _, err = stack.cli("rebase", "--abort")
    assert "resolution" not in err and "left-behind" not in err, err
    assert not (stack.root / ".patchforge" / "left-behind").exists()

    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    work = stack.root / ".patchforge" / "work" / "up"
    resolved = with_lines({2: b"def f2():\n    return -2\n\n",
                           10: b"def f10():\r\n    return -100\n\n"})
    (work / "pkg" / "mod.py").write_bytes(resolved)
    _, _, err = stack.cli("rebase", "--abort")
    kept = stack.root / ".patchforge" / "left-behind" / "up-1"
    assert "(a resolution: pkg/mod.py) is kept in .patchforge/left-behind/up-1" in err, err
    assert (kept / "pkg" / "mod.py").read_bytes() == resolved
    assert sorted(p.name for p in kept.rglob("*") if p.is_file()) == ["mod.py"]
    assert not work.exists()

    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    (work / "pkg" / "mod.py").write_bytes((kept / "pkg" / "mod.py").read_bytes())
    summary = stack.rebase_json("--continue")
    assert [(p["name"], p["action"]) for p in summary["patches"]] == [
        ("first.patch", "clean"), ("middle.patch", "resolved"), ("last.patch", "clean")]
    assert b"return -100" in (stack.root / "series" / "up" / "middle.patch").read_bytes()


@pytest.mark.parametrize("how", ["--skip", "--continue"])
def test_a_skip_or_continue_that_fails_afterwards_leaves_the_rebase_stopped(stack, upstream, how):
    """`--skip` (or `--continue`) that fails after taking the stopped patch (here: the
    configuration was broken while the rebase was stopped, and is only read on the way to the
    write-out) leaves the rebase stopped on that patch, journal and worktree as they were; once
    the cause is fixed, the same command does what it was asked. Before, the skip was recorded
    by the failed command and the second `--skip` answered "nothing to skip"."""
    new_commit = conflict_stack(stack, upstream)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    work = stack.root / ".patchforge" / "work" / "up"
    if how == "--continue":
        (work / "pkg" / "mod.py").write_bytes(with_lines({2: b"def f2():\n    return -2\n\n",
                                                          10: b"def f10():\n    return -100\n\n"}))
    config = stack.root / "patchforge.toml"
    good = config.read_bytes()
    config.write_bytes(good + b"\n[profiles\n")
    state = stack.root / ".patchforge"
    before = stack.snapshot(), snapshot(state, dirs=False)
    _, _, err = stack.cli("rebase", how, expect=2)
    assert "patchforge.toml:" in err and "not valid TOML" in err
    assert (stack.snapshot(), snapshot(state, dirs=False)) == before
    config.write_bytes(good)
    _, _, err = stack.cli("status", expect=1)
    assert "middle.patch" in err
    summary = stack.rebase_json(how, expect=1 if how == "--skip" else 0)
    assert [(p["name"], p["action"]) for p in summary["patches"]] == [
        ("first.patch", "clean"),
        ("middle.patch", "skipped" if how == "--skip" else "resolved"), ("last.patch", "clean")]


def test_a_series_edited_while_stopped_is_refused_not_overwritten(stack, upstream):
    """The write-out replaces the series file and the patch files with what the run made of
    them as they were when it began: a fix edited by hand, or a patch added to the series,
    while the rebase is stopped would be lost. --skip and --continue refuse, name the file and
    change nothing; once it is put back the rebase goes on."""
    new_commit = conflict_stack(stack, upstream)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    first = stack.root / "series" / "up" / "first.patch"
    original = first.read_bytes()
    first.write_bytes(original.replace(b"\n---\n", b"\nA note added while stopped.\n---\n", 1))
    before = stack.snapshot()
    _, _, err = stack.cli("rebase", "--skip", expect=2)
    assert "series/up/first.patch changed while the rebase was stopped" in err
    assert stack.snapshot() == before
    first.write_bytes(original)
    series = stack.root / "series" / "up" / "series"
    listed = series.read_bytes()
    (stack.root / "series" / "up" / "extra.patch").write_bytes(stack.patch("up", "last"))
    series.write_bytes(listed + b"extra.patch\n")
    _, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "series/up/series changed" in err
    series.write_bytes(listed)
    summary = stack.rebase_json("--skip", expect=1)
    assert [p["action"] for p in summary["patches"]] == ["clean", "skipped", "clean"]


def test_stop_after_stop_reuses_the_worktree_and_holds_only_the_new_stop(stack, upstream):
    """Two stops in a row: the second stop's worktree holds its own patch's files only (the
    first stop's files, and what a user left there, are gone), git there shows the new conflict,
    and once the run goes through the worktree is removed."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "one", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    stack.add_patch("up", "two", {"pkg/other.py": b"x = 2\n"})
    stack.add_patch("up", "three", {"pkg/other.py": b"x = 2\ny = 3\n"})
    new_commit = upstream.commit({"pkg/mod.py": with_lines({10: b"def f10():\n    return 100\n\n"}),
                                  "pkg/other.py": b"x = 20\n"}, "both files change")
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    work = stack.root / ".patchforge" / "work" / "up"
    (work / "scratch.txt").write_bytes(b"a note left at the first stop\n")
    # In pkg/, which the next stop needs too (it stays, emptied): a note, a directory, a link
    # out of the worktree (removed, never followed).
    (work / "pkg" / "notes.txt").write_bytes(b"a note\n")
    (work / "pkg" / "sub").mkdir()
    (work / "pkg" / "sub" / "more.txt").write_bytes(b"more\n")
    outside = stack.root.parent / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_bytes(b"not the worktree's\n")
    (work / "pkg" / "link").symlink_to(outside)
    stack.cli("rebase", "--skip", expect=3)
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*")
                  if ".git" not in p.parts) == ["pkg", "pkg/other.py"]
    assert (outside / "kept.txt").read_bytes() == b"not the worktree's\n"
    assert git(work, "status", "--porcelain").split() == ["M", "pkg/other.py"]
    assert git(work, "show", "HEAD:pkg/other.py") == "x = 20\n"
    stack.cli("rebase", "--skip", expect=3)
    summary = stack.rebase_json("--skip", expect=1)
    assert [p["action"] for p in summary["patches"]] == ["skipped"] * 3
    assert not work.exists()


def test_conflict_then_abort_restores_every_byte(stack, upstream):
    new_commit = conflict_stack(stack, upstream)
    before = stack.snapshot()
    assert any(rel.startswith("overlays/up/") for rel in before)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    code, out, _ = stack.cli("rebase", "--abort", "--json")
    assert validation_errors(json.loads(out), "rebase") == []
    assert stack.snapshot() == before
    assert not (stack.root / ".patchforge" / "rebase").exists()
    assert not (stack.root / ".patchforge" / "work" / "up").exists()
    stack.cli("rebase", "--continue", expect=2)  # nothing in progress any more


def test_new_rebase_refused_while_one_is_in_progress(stack, upstream):
    new_commit = conflict_stack(stack, upstream)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    journal = (stack.root / ".patchforge" / "rebase" / "journal.json").read_bytes()
    _, _, err = stack.cli("rebase", "--to", f"up={new_commit}", expect=2)
    assert "in progress" in err
    _, _, err = stack.cli("rebase", "--to", f"up={new_commit}", "--dry-run", expect=2)
    assert (stack.root / ".patchforge" / "rebase" / "journal.json").read_bytes() == journal


def test_stale_lock_of_a_dead_process_does_not_block(stack, upstream):
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "fix", {"pkg/mod.py": with_lines({3: b"def f3():\n    return -3\n\n"})})
    new_commit = upstream.commit({"README": b"new\n"})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (stack.root / ".patchforge").mkdir(exist_ok=True)
    (stack.root / ".patchforge" / "lock").write_text(f"{dead.pid}\n")
    stack.rebase_json("--to", f"up={new_commit}")
    assert stack.lock()["upstreams"]["up"]["commit"] == new_commit
    # A live holder blocks (this test process itself).
    from patchforge.fsutil import RepoLock
    with RepoLock(stack.root / ".patchforge"):
        _, _, err = stack.cli("rebase", "--to", f"up={upstream.base}", expect=2)
    assert "another patchforge process" in err


# ------------------------------------------------------------------------------------------------
# Landed, deleted upstream, dry run


def test_landed_patch_is_dropped_to_upstreamed(stack, upstream):
    stack.add_upstream("up", upstream)
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed upstream as well'\n\n"})
    original = stack.add_patch("up", "landed", {"pkg/mod.py": fixed})
    stack.add_patch("up", "kept", {"pkg/other.py": b"x = 3\n"})
    landing = upstream.commit({"pkg/mod.py": fixed}, "upstream takes the fix")
    new_commit = upstream.commit({"README": b"later\n"}, "later work")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [(p["name"], p["action"], p["destination"]) for p in summary["patches"]] == [
        ("landed.patch", "dropped", "upstreamed"), ("kept.patch", "clean", "series")]
    assert summary["patches"][0]["landed_in"] == landing
    assert stack.series("up") == ["kept.patch"]
    kept = stack.patch("up", "landed", "upstreamed")
    # The old patch, byte for byte, with Applied-Upstream added at the end of its header.
    applied = f"Applied-Upstream: {new_commit}, commit:{landing}\n".encode()
    base_line = f"Base: {upstream.base}\n".encode()
    assert kept == original.replace(base_line, base_line + applied)
    assert not (stack.root / "series" / "up" / "landed.patch").exists()


def test_a_rebase_keeps_the_series_files_comments_where_they_were(stack, upstream):
    """The series file's comments are kept byte for byte, the reference says; a rebase moved
    every entry below every comment (a fix listed under `# core` ended under `# experimental,
    keep last`) and dropped the comment written after an entry. Now only the line of the fix
    that landed goes; every other line stays as written, where it was."""
    stack.add_upstream("up", upstream)
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed upstream as well'\n\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": fixed})
    stack.add_patch("up", "kept", {"pkg/other.py": b"x = 3\n"})
    stack.add_patch("up", "late", {"README": b"upstream, patched\n"})
    series = stack.root / "series/up/series"
    series.write_bytes(b"# --- core fixes ---\nlanded.patch  # until PR 123 lands\n"
                       b"kept.patch -p1  # needed for gfx942\n\n"
                       b"# --- experimental, keep last ---\nlate.patch\n")
    upstream.commit({"pkg/mod.py": fixed}, "upstream takes the fix")
    new_commit = upstream.commit({"pkg/newfile.py": b"later\n"}, "later work")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["destination"] for p in summary["patches"]] == ["upstreamed", "series", "series"]
    assert series.read_bytes() == (b"# --- core fixes ---\nkept.patch -p1  # needed for gfx942\n"
                                   b"\n# --- experimental, keep last ---\nlate.patch\n")


def test_whether_there_is_a_history_is_asked_beside_the_walk(stack, upstream, monkeypatch):
    """The walk's own thread waits for no `git merge-base` before its first patch, and the
    thread that reads the history asks none either: the history's walk says whether the
    upstream has a history from the base to the target. The answers are those of a run that
    asks first: the landing commit of a git upstream's history, and none for a directory
    upstream (a root commit per import)."""
    import threading

    from patchforge.store.gitstore import UpstreamStore

    asked = []
    real = UpstreamStore._run

    def run(self, *args, **kw):
        if "merge-base" in args:
            asked.append(threading.current_thread() is threading.main_thread())
        return real(self, *args, **kw)
    monkeypatch.setattr(UpstreamStore, "_run", run)
    stack.add_upstream("up", upstream)
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed upstream as well'\n\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": fixed})
    landing = upstream.commit({"pkg/mod.py": fixed}, "upstream takes the fix")
    new_commit = upstream.commit({"README": b"later\n"}, "later work")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert summary["patches"][0]["landed_in"] == landing
    assert asked == []

    from helpers.project import add_patch_file, patch_bytes

    tree = stack.root.parent / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_bytes(BASE)
    directory = Stack(stack.root.parent / "dir-project")
    assert run_cli(directory.root, "upstream", "add", "d", "--dir", str(tree), "--at", "one").rc == 0
    add_patch_file(directory.root, "d", "landed.patch", patch_bytes(
        "d", directory.lock()["upstreams"]["d"]["commit"], "fix f7",
        upstream.diff({"pkg/mod.py": fixed}, upstream.base)))
    (tree / "pkg" / "mod.py").write_bytes(fixed)
    asked.clear()
    summary = directory.rebase_json("--to", "d=two")
    assert [(p["action"], p["landed_in"]) for p in summary["patches"]] == [("dropped", None)]
    assert asked == []


def test_a_series_entry_without_the_patch_suffix_is_rebased_in_its_own_file(stack, upstream):
    """A series line may name a patch without `.patch` (the file is NAME.patch): the rebase
    writes the moved patch there, not to a new file NAME beside it (the series read the old
    NAME.patch, unmoved), and sets a landed one aside as NAME.patch, removing its file."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "landed", {"pkg/other.py": b"x = 3\n"})
    old = stack.add_patch("up", "fix-f20", {"pkg/mod.py": with_lines({20: b"def f20():\n    return -20\n\n"})})
    series = stack.root / "series" / "up" / "series"
    series.write_bytes(b"landed\nfix-f20\n")
    upstream.commit({"pkg/other.py": b"x = 3\n"}, "upstream takes the fix")
    new_commit = upstream.commit({"pkg/mod.py": b"# a\n# b\n# c\n" + BASE}, "header comment")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    # Named by its file, as every command names it (and as `list` shows it).
    assert [(p["name"], p["destination"]) for p in summary["patches"]] == [
        ("landed.patch", "upstreamed"), ("fix-f20.patch", "series")]
    assert sorted(p.name for p in series.parent.iterdir()) == ["fix-f20.patch", "series",
                                                               "upstreamed"]
    assert series.read_bytes() == b"fix-f20\n"
    new = stack.patch("up", "fix-f20")
    assert new != old and f"Base: {new_commit}\n".encode() in new
    assert [p.name for p in (series.parent / "upstreamed").iterdir()] == ["landed.patch"]
    stack.cli("status")  # the series, as written, applies at the new pin
    # ... and lint takes NAME as listing NAME.patch (it said "patch file not listed").
    code, out, _ = stack.cli("lint", "--no-forge", expect=None)
    assert "not listed in the series" not in out


def test_a_series_entry_without_the_patch_suffix_is_found_by_every_command(stack, upstream):
    """A line `fix` lists fix.patch, and `list` showed it as up/fix.patch, but `show fix`,
    `show up/fix`, `edit fix`, `delete fix`, `rename fix ...`, `new --after fix` and `pr fix`
    all said there was no patch named fix. Every command finds it by either spelling, and
    what changes its entry keeps every other line as written."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "fa", {"pkg/other.py": b"x = 3\n"})
    stack.add_patch("up", "fb", {"pkg/mod.py": with_lines({20: b"def f20():\n    return -20\n\n"})})
    series = stack.root / "series" / "up" / "series"
    series.write_bytes(b"# mine\nfa  # short name\nfb.patch\n")
    for name in ("fa", "up/fa", "fa.patch"):
        stack.cli("show", name)
    stack.cli("new", "fc", "--after", "fa", "--no-edit", "-m", "fc")
    assert series.read_bytes() == b"# mine\nfa  # short name\nfc.patch\nfb.patch\n"
    stack.cli("rename", "fa", "fz")
    assert series.read_bytes() == b"# mine\nfz  # short name\nfc.patch\nfb.patch\n"
    assert (stack.root / "series/up/fz.patch").is_file()
    stack.cli("delete", "fz")
    assert series.read_bytes() == b"# mine\nfc.patch\nfb.patch\n"


def test_a_change_an_earlier_patch_made_names_no_landing_commit(stack, upstream):
    """A patch whose change an earlier patch of the series already made meets it as landed,
    but no upstream commit made it: no landing commit is named, though the target's commit
    touches the file (the landing search asks the target again for that patch, rather than
    reusing a verdict the earlier patch's change decided)."""
    stack.add_upstream("up", upstream)
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed in the series'\n\n"})
    stack.add_patch("up", "first", {"pkg/mod.py": fixed})
    stack.add_patch("up", "again", {"pkg/mod.py": fixed})
    new_commit = upstream.commit({"pkg/mod.py": with_lines({20: b"def f20():\n    pass\n\n"})},
                                 "upstream changes the same file elsewhere")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [(p["name"], p["action"], p["landed_in"]) for p in summary["patches"]] == [
        ("first.patch", "clean", None), ("again.patch", "dropped", None)]
    applied = f"Applied-Upstream: {new_commit}\n".encode()
    assert applied in stack.patch("up", "again", "upstreamed")


def test_superseded_landing_is_dropped_on_the_history_word(stack, upstream):
    """The judge status uses: a fix upstream landed and then rewrote again is dropped (its
    landing commit named), not stopped as a conflict."""
    stack.add_upstream("up", upstream)
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed upstream as well'\n\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": fixed})
    landing = upstream.commit({"pkg/mod.py": fixed}, "upstream takes the fix")
    rewritten = with_lines({7: b"def f7():\n    return 'seven, said differently'\n\n"})
    new_commit = upstream.commit({"pkg/mod.py": rewritten}, "upstream rewrites it")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    [patch] = summary["patches"]
    assert (patch["name"], patch["action"], patch["destination"]) == \
        ("landed.patch", "dropped", "upstreamed")
    assert patch["landed_in"] == landing
    assert any(f"history: commit {landing} makes this change" in e for e in patch["evidence"])


def test_landing_commits_and_the_history_evidence_of_an_undone_landing(stack, upstream):
    """The landing commits are looked up after the walk, from the history's diffs of the landed
    patches' files read together. One fix was undone upstream and made again: the history's
    evidence says so (it comes from those diffs)."""
    stack.add_upstream("up", upstream)
    f7 = b"def f7():\n    return 'seven, fixed upstream as well'\n\n"
    f12 = b"def f12():\n    return 'twelve, fixed, undone, then fixed again upstream'\n\n"
    stack.add_patch("up", "again", {"pkg/mod.py": with_lines({12: f12})})
    stack.add_patch("up", "kept", {"README": b"the series' readme\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": with_lines({7: f7})})
    landing = upstream.commit({"pkg/mod.py": with_lines({7: f7})}, "upstream takes a fix")
    upstream.commit({"pkg/mod.py": with_lines({7: f7, 12: f12})}, "upstream takes the other")
    undo = upstream.commit({"pkg/mod.py": with_lines({7: f7})}, "upstream undoes it")
    again = upstream.commit({"pkg/mod.py": with_lines({7: f7, 12: f12})}, "and makes it again")
    summary = stack.rebase_json("--to", f"up={again}")
    assert [(p["name"], p["action"], p["landed_in"]) for p in summary["patches"]] == [
        ("again.patch", "dropped", again), ("kept.patch", "clean", None),
        ("landed.patch", "dropped", landing)]
    assert any(f"history: commit {undo} undoes this change" in line
               for line in summary["patches"][0]["evidence"])
    for name, commit in (("again.patch", again), ("landed.patch", landing)):
        assert f"commit:{commit}".encode() in \
            (stack.root / "series" / "up" / "upstreamed" / name).read_bytes()


def test_git_work_started_during_the_walk_gives_what_it_gives_after_it(stack, upstream,
                                                                         monkeypatch):
    """The moved patches' new diffs and the landed files' history diffs are made by git
    processes started while the walk goes on, for each part of the series it has judged:
    made after every patch, or all after the walk, every file the rebase writes and its
    report are the same bytes. Offset patches on several files, landings from several
    commits, one undone upstream and made again (its evidence comes from those history
    diffs)."""
    from patchforge.rebase import engine

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    b_fix = b"x = 'b, a fix long enough for the history to judge it'\n"
    names = [f"pkg/m{k}.py" for k in range(6)]
    start = upstream.commit({name: BASE for name in names}, "more modules")
    stack.add_upstream("up", upstream, at=start)
    fix = {k: with_lines({k + 3: b"def f%d():\n    return 'fixed %d'\n\n" % (k + 3, k)})
           for k in range(6)}
    for k, name in enumerate(names):
        stack.add_patch("up", f"moved{k}", {name: fix[k]})
    stack.add_patch("up", "landed-a", {"pkg/mod.py": with_lines({7: b"def f7():\n    return 'a'\n\n"})})
    stack.add_patch("up", "landed-b", {"pkg/other.py": b_fix})
    stack.add_patch("up", "landed-c", {"README": b"upstream, fixed\n"})
    pushed = {name: b"# a header upstream added\n" * 3 + BASE for name in names}
    upstream.commit({**pushed, "pkg/mod.py": with_lines({7: b"def f7():\n    return 'a'\n\n"})},
                    "upstream takes fix a and moves the modules' code down")
    upstream.commit({"pkg/other.py": b_fix}, "upstream takes fix b")
    upstream.commit({"pkg/other.py": b"x = 1\n"}, "upstream undoes it")
    upstream.commit({"pkg/other.py": b_fix}, "and makes it again")
    target = upstream.commit({"README": b"upstream, fixed\n"}, "upstream takes fix c")
    results = {}
    for parts in (10**6, 1):
        copy = stack.root.parent / f"copy-{parts}"
        shutil.copytree(stack.root, copy, symlinks=True)
        monkeypatch.setattr(engine, "_EARLY_PARTS", parts)
        monkeypatch.setattr(engine, "_EARLY_MIN", 1)
        result = run_cli(copy, "rebase", "--to", f"up={target}", "--json")
        assert result.rc == 0, result.err
        results[parts] = (json.loads(result.out), snapshot(copy, skip_state=True, dirs=False))
    summary = results[10**6][0]
    assert sorted((p["name"], p["action"]) for p in summary["patches"]) == sorted(
        [(f"moved{k}.patch", "offset") for k in range(6)]
        + [(f"landed-{x}.patch", "dropped") for x in "abc"])
    assert all(p["landed_in"] for p in summary["patches"] if p["action"] == "dropped")
    assert any("undoes this change" in line for p in summary["patches"]
               for line in p["evidence"])
    assert results[10**6] == results[1]


def test_new_file_upstream_added_with_identical_bytes_merges_cleanly(stack, upstream):
    """A fix that creates a file upstream has since added byte for byte (and changes another
    file) moves like `git rebase` moves it: the creation drops out, the rest stays."""
    stack.add_upstream("up", upstream)
    helper = b"def helper():\n    return 'shared helper, added by the fix'\n"
    stack.add_patch("up", "fix", {"pkg/helper.py": helper, "pkg/other.py": b"x = 3\n"})
    new_commit = upstream.commit({"pkg/helper.py": helper}, "upstream adds the same helper")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    [patch] = summary["patches"]
    assert (patch["name"], patch["destination"]) == ("fix.patch", "series"), patch
    moved = stack.patch("up", "fix")
    assert b"pkg/other.py" in moved and b"pkg/helper.py" not in moved
    checkout = stack.root.parent / "check"
    git(stack.root.parent, "clone", "-q", str(upstream.path), str(checkout))
    git(checkout, "checkout", "-q", new_commit)
    (checkout / "fix.patch").write_bytes(moved)
    git(checkout, "apply", "--check", "fix.patch")


def test_a_new_file_moves_with_a_patch_that_needs_the_three_way_merge(stack, upstream):
    """A fix that creates a file the upstream does not have, and changes a file the upstream
    changed next to its hunk (a 3-way merge): no stop; the file is created as `git rebase`
    creates it."""
    stack.add_upstream("up", upstream)
    helper = b"def helper():\n    return 'added by the fix'\n"
    fixed = b"def f10():\n    return -10\n\n"
    stack.add_patch("up", "fix", {"pkg/helper.py": helper, "pkg/mod.py": with_lines({10: fixed})})
    theirs = with_lines({9: b"def f9():\n    return 9  # upstream\n\n"})
    new_commit = upstream.commit({"pkg/mod.py": theirs}, "touch f9")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["merged"], summary["patches"]
    files = apply_with_git(upstream, new_commit, stack.patch("up", "fix"))
    assert files == {"pkg/helper.py": helper, "pkg/mod.py": theirs.replace(BASE_LINES[10], fixed)}


def test_file_deleted_upstream_stops_instead_of_dropping(stack, upstream):
    stack.add_upstream("up", upstream)
    original = stack.add_patch("up", "other-fix", {"pkg/other.py": b"x = 42\n"})
    new_commit = upstream.commit({"pkg/other.py": None}, "remove other.py")
    before = stack.snapshot()
    code, out, err = stack.cli("rebase", "--to", f"up={new_commit}", "--json", expect=3)
    stopped = json.loads(out)["stopped"]
    assert stopped["kind"] == "obsolete" and stopped["files"] == ["pkg/other.py"]
    assert "gone upstream" in err
    assert stack.snapshot() == before
    stack.rebase_json("--skip", expect=1)
    assert stack.series("up") == []
    assert stack.patch("up", "other-fix", "skipped") == original


def test_a_rebase_whose_files_the_store_holds_starts_no_presence_check(stack, upstream,
                                                                      tmp_path, monkeypatch):
    """A rebase starts the partial store's check of which series files it lacks before it
    writes its journal. Files its pack indexes name are not asked of git: a rebase whose files
    the store holds already (read by a first dry run) starts no `git rev-list`, and plans
    the same."""
    new_commit = conflict_stack(stack, upstream)
    _, first, _ = stack.cli("rebase", "--to", f"up={new_commit}", "--dry-run", "--json",
                            expect=1)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    _, again, _ = stack.cli("rebase", "--to", f"up={new_commit}", "--dry-run", "--json",
                            expect=1)
    assert again == first
    names = [e["name"] for e in map(json.loads, trace.read_text().splitlines())
             if e["event"] == "cmd_name"]
    assert "rev-list" not in names and "fetch" not in names, names


def test_dry_run_writes_nothing(stack, upstream):
    new_commit = conflict_stack(stack, upstream)
    shutil.rmtree(stack.root / ".patchforge", ignore_errors=True)
    before = stack.snapshot()
    code, out, _ = stack.cli("rebase", "--to", f"up={new_commit}", "--dry-run", "--json",
                             expect=1)
    summary = json.loads(out)
    assert validation_errors(summary, "rebase") == []
    assert summary["dry_run"] is True and summary["written"] is False
    assert [(p["name"], p["action"]) for p in summary["patches"]] == [
        ("first.patch", "clean"), ("middle.patch", "conflict"), ("last.patch", "clean")]
    assert stack.snapshot() == before
    assert not (stack.root / ".patchforge").exists()


# ------------------------------------------------------------------------------------------------
# Several upstreams; the write-out


def test_multi_upstream_moves_the_named_ones_only(stack, tmp_path):
    a = Upstream(tmp_path / "a", {"a.py": BASE})
    b = Upstream(tmp_path / "b", {"b.py": BASE})
    c = Upstream(tmp_path / "c", {"c.py": BASE})
    for name, up in (("a", a), ("b", b), ("c", c)):
        stack.add_upstream(name, up)
        stack.add_patch(name, f"fix-{name}", {f"{name}.py": with_lines({4: b"def f4():\n    pass\n\n"})})
    stack.cli("overlays")
    a2 = a.commit({"a.py": b"# moved\n" + BASE})
    b2 = b.commit({"README": b"b\n"})
    c2 = c.commit({"README": b"c\n"})
    before_c = {rel: data for rel, data in stack.snapshot().items() if "/c/" in f"/{rel}"}
    summary = stack.rebase_json("--to", f"a={a2}", f"b={b2}")
    assert sorted(summary["upstreams"]) == ["a", "b"]
    lock = stack.lock()["upstreams"]
    assert (lock["a"]["commit"], lock["b"]["commit"], lock["c"]["commit"]) == (a2, b2, c.base)
    assert c2 != c.base
    assert {rel: data for rel, data in stack.snapshot().items()
            if "/c/" in f"/{rel}"} == before_c
    assert [(p["upstream"], p["action"]) for p in summary["patches"]] == [("a", "offset"),
                                                                           ("b", "clean")]
    stack.cli("overlays", "--check")
    manifest = json.loads((stack.root / "overlays" / "manifest.json").read_bytes())
    assert manifest["upstreams"]["a"]["commit"] == a2 and manifest["upstreams"]["c"]["commit"] == c.base


def test_text_output_has_a_summary_and_a_range_diff(stack, upstream):
    new_commit = conflict_stack(stack, upstream)
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    (stack.root / ".patchforge" / "work" / "up" / "pkg" / "mod.py").write_bytes(
        with_lines({2: b"def f2():\n    return -2\n\n", 10: b"def f10():\n    return -100\n\n"}))
    _, out, _ = stack.cli("rebase", "--continue")
    assert "up/middle.patch" in out and "resolved" in out
    assert "2 clean, 1 resolved" in out
    assert "range-diff of the old series against the new one" in out


def test_schema_rejects_what_the_contract_does_not_allow(stack, upstream):
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "fix", {"pkg/other.py": b"x = 5\n"})
    new_commit = upstream.commit({"README": b"2\n"})
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert validation_errors({**summary, "patches": [{**summary["patches"][0],
                                                      "action": "fuzzed"}]}, "rebase")
    assert validation_errors({**summary, "upstreams": {"up": {"from": "x"}}}, "rebase")
    assert validation_errors({k: v for k, v in summary.items() if k != "counts"}, "rebase")
    assert validation_errors({"aborted": True}, "rebase")


def test_skip_and_continue_need_a_rebase_in_progress(stack, upstream):
    stack.add_upstream("up", upstream)
    _, _, err = stack.cli("rebase", "--skip", expect=2)
    assert "no rebase in progress" in err
    _, _, err = stack.cli("rebase", "--to", "up=HEAD", "--continue", expect=2)
    assert "exactly one of" in err


def test_a_fix_set_aside_twice_under_one_name_keeps_both(stack, upstream):
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "fix", {"pkg/other.py": b"x = 'first take of the fix'\n"})
    aside = stack.root / "series" / "up" / "upstreamed"
    aside.mkdir()
    (aside / "fix.patch").write_bytes(b"Description: an older fix of the same name\n")
    new_commit = upstream.commit({"pkg/other.py": b"x = 'first take of the fix'\n"})
    stack.rebase_json("--to", f"up={new_commit}")
    assert (aside / "fix.patch").read_bytes() == b"Description: an older fix of the same name\n"
    assert b"Applied-Upstream" in (aside / "fix.2.patch").read_bytes()


# ------------------------------------------------------------------------------------------------
# One judge: status says what rebase does


def _copied_shape() -> tuple[bytes, tuple[bytes, bytes], dict[str, bytes]]:
    """(base file, the file in two upstream commits, the patch's files) in the shape met on AITER's history: the
    upstream made the fix, and also copied the unfixed block elsewhere; one hunk of the patch
    is then both there and still applicable, another landed with its context changed (no
    longer applies), and git's 3-way merge leaves nothing to change: at the fix's own place
    (where the merge maps it) the change is there, the unfixed code is upstream's new copy."""
    region = (b"# ---- setup section ----\n"
              b"def alpha():\n"
              b"    setup_value = compute_setup()\n"
              b"    return setup_value\n"
              b"# ---- end of setup ----\n\n")
    fixed = region.replace(b"compute_setup()\n",
                           b"compute_setup()\n    validate_setup(setup_value, strict=True)\n")
    beta = (b"def beta():\n"
            b"    other_value = compute_other_value(1)\n"
            b"    middle = 0\n"
            b"    return other_value\n\n")
    beta_fixed = beta.replace(b"(1)", b"(2222)")
    filler = b"".join(f"def filler{i}():\n    return {i}\n\n".encode() for i in range(12))
    base = region + filler + beta + filler
    patched = fixed + filler + beta_fixed + filler
    # Made in two upstream commits: no one commit of the history makes the patch's change.
    halfway = fixed + filler + beta + filler + region  # the fix, and the unfixed block copied
    target = fixed + filler + beta_fixed.replace(b"return other_value",
                                                 b"return other_value  # upstream") \
        + filler + region
    return base, (halfway, target), {"pkg/dup.py": patched}


def test_status_and_rebase_agree_on_every_kind_of_judgement(stack, tmp_path):
    """Each judgement status can give, and what rebase --to the same target then does, patch by
    patch (dry run and real run): applies, offset, merges, landed, a creation upstream made
    identically, a fix with fuzz that creates files, conflict, a file gone upstream, and
    a fix landed at its own place whose unfixed code upstream also copied elsewhere (landed:
    the merge changes nothing), and `unsure`, a place in repeated code the line map cannot
    decide, which both must stop on (status called the fix that creates files a conflict
    while the rebase merged it)."""
    base_dup, (halfway_dup, target_dup), copied_files = _copied_shape()
    block = [b"    a = load()\n", b"    if a:\n", b"        use(a)\n", b"    b = a + 1\n",
             b"    CHECK = False\n", b"    c = b * 2\n", b"    return c\n", *[b"    pass\n"] * 6]
    repeated = block * 3
    repeated_fixed = list(repeated)
    repeated_fixed[17] = b"    CHECK = True\n"  # block 2
    repeated_target = list(repeated)
    repeated_target[16] = b"    b = a + 2\n"  # next to the fix's line, in block 2 itself
    lines = [f"def f{i}():\n    x = {i}\n    y = {i}\n    return x + y\n\n".encode()
             for i in range(30)]

    def text(replacements):
        return b"".join(replacements.get(i, line) for i, line in enumerate(lines))

    up = Upstream(tmp_path / "judged", {"pkg/mod.py": text({}), "pkg/dup.py": base_dup,
                                        "pkg/rep.py": b"".join(repeated),
                                        "pkg/gone.py": b"value = 1\n"})
    stack.add_upstream("up", up)
    stack.add_patch("up", "clean", {"pkg/mod.py": text({5: lines[5].replace(b"x = 5", b"x = 500")})})
    stack.add_patch("up", "landed", {"pkg/mod.py": text({10: lines[10].replace(b"y = 10", b"y = 1000")})})
    stack.add_patch("up", "merges", {"pkg/mod.py": text({
        20: lines[20].replace(b"x = 20", b"x = 2000"), 21: lines[21].replace(b"x = 21", b"x = 2100")})})
    stack.add_patch("up", "clash", {"pkg/mod.py": text({25: lines[25].replace(b"x = 25", b"x = 2500")})})
    stack.add_patch("up", "copied", copied_files)
    stack.add_patch("up", "unsure", {"pkg/rep.py": b"".join(repeated_fixed)})
    stack.add_patch("up", "created", {"pkg/new_helper.py": b"def helper():\n    return 'same'\n",
                                      "pkg/other_new.py": b"value = 'only in the fix'\n"})
    stack.add_patch("up", "obsolete", {"pkg/gone.py": b"value = 2\n"})
    # The shape of add-flydsl-blockscale-bpreshuffle-gemm on a real AITER work branch: a file
    # that only applies with fuzz, and new files; status called it a conflict while the
    # rebase merged it.
    stack.add_patch("up", "creates", {
        "pkg/mod.py": text({15: lines[15].replace(b"y = 15", b"y = 1500")}),
        "pkg/brand_new.py": b"def kernel():\n    return 'tuned'\n"})
    up.commit({"pkg/dup.py": halfway_dup}, "the setup is checked, and copied")
    target = up.commit({
        "pkg/mod.py": text({
            0: b"# a new first line moves everything\n" + lines[0],
            10: lines[10].replace(b"y = 10", b"y = 1000"),
            20: lines[20].replace(b"return x + y", b"return x + y  # upstream"),
            16: lines[16].replace(b"def f16():", b"def f16():  # upstream"),
            25: lines[25].replace(b"x = 25", b"x = 25  # upstream")}),
        "pkg/dup.py": target_dup,
        "pkg/rep.py": b"".join([b"# a header line\n"] * 11 + repeated_target),
        "pkg/new_helper.py": b"def helper():\n    return 'same'\n",
        "pkg/gone.py": None}, "upstream moves on")
    expected = {"clean.patch": ("offset", "move"), "landed.patch": ("upstreamed", "drop"),
                "merges.patch": ("merges", "move"), "clash.patch": ("conflict", "stop"),
                "copied.patch": ("upstreamed", "drop"),
                "unsure.patch": ("unsure", "stop"), "created.patch": ("partial", "move"),
                "obsolete.patch": ("obsolete", "stop"), "creates.patch": ("fuzz", "move")}
    _, out, _ = stack.cli("status", "--against", f"up={target}", "--json", expect=1)
    assert validation_errors(json.loads(out), "status") == []
    status = {p["name"]: (p["state"], p["rebase"]) for p in json.loads(out)["patches"]}
    assert status == expected
    word = {"clean": "move", "offset": "move", "merged": "move", "dropped": "drop",
            "conflict": "stop"}
    dry = stack.rebase_json("--to", f"up={target}", "--dry-run", expect=1)
    assert {p["name"]: word[p["action"]] for p in dry["patches"]} == \
        {name: how for name, (_, how) in expected.items()}
    # The real run stops where status said it would, and moves or drops the rest as it said.
    stops = []
    document = stack.rebase_json("--to", f"up={target}", expect=3)
    while True:
        stops.append(document["stopped"]["name"])
        document = stack.json("rebase", "--skip", expect=None)
        if "stopped" not in document or not document["stopped"]:
            break
    assert stops == [n for n, (_, how) in expected.items() if how == "stop"]
    did = {p["name"]: p["action"] for p in document["patches"]}
    assert {n: word.get(a, "stop") for n, a in did.items()} == \
        {name: how for name, (_, how) in expected.items()}
    assert (stack.root / "series" / "up" / "skipped" / "unsure.patch").is_file()
    moved = stack.patch("up", "created")
    assert b"new_helper.py" not in moved and b"other_new.py" in moved
    assert did["creates.patch"] == "merged"
    assert b"+++ b/pkg/brand_new.py" in stack.patch("up", "creates")


def test_an_empty_patch_is_never_reported_or_recorded_as_landed(tmp_path):
    """A fix begun with `new` and never refreshed with a change has nothing that could have
    landed. Before, status called it `upstreamed` (even at the pin) and a rebase moved it to
    upstreamed/ with `Applied-Upstream: <target>` filled in, a landing that never happened.
    Now it is `empty` (status's word for a patch without a diff) and moves with the series."""
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"".join(b"line%d\n" % i for i in range(20))})
    stack.cli("new", "placeholder")
    stack.cli("edit", "--close")
    stack.add_fix("real", "a.py", b"".join(b"line%d\n" % i for i in range(20)),
                  b"".join(b"line%d\n" % i for i in range(20)).replace(b"line3\n", b"LINE3\n"))
    states = {p["name"]: p["state"] for p in stack.json("status")["patches"]}
    assert states == {"placeholder.patch": "empty", "real.patch": "applies"}, states
    target = stack.commit({"b.py": b"new upstream file\n"}, "v2")
    stack.rebase_json("--to", f"up={target}")
    assert stack.series("up") == ["placeholder.patch", "real.patch"]
    assert not (stack.root / "series/up/upstreamed").exists()
    assert b"Applied-Upstream" not in stack.patch("up", "placeholder")


def test_two_damaged_edit_states_are_each_discarded_by_a_patch_of_their_upstream(stack, tmp_path):
    """Two upstreams whose open edits' state files both cannot be read: `edit --close
    --discard` with no name cannot tell which to end and says so; naming a patch of one of them
    ends that one's edit (the way out the error names), then the other's."""
    for name in ("a", "b"):
        up = Upstream(tmp_path / name, {f"{name}.py": BASE})
        stack.add_upstream(name, up)
        stack.add_patch(name, f"fix-{name}", {f"{name}.py": with_lines({4: b"def f4():\n    pass\n\n"})})
        stack.cli("edit", f"fix-{name}")
    states = [stack.root / ".patchforge" / "work" / f"{name}.json" for name in ("a", "b")]
    for state in states:
        state.write_bytes(b'{"patch": ')
    _, _, err = stack.cli("edit", "--close", "--discard", expect=2)
    assert str(states[0]) in err or str(states[1]) in err
    stack.cli("edit", "--close", "--discard", "fix-b")
    assert states[0].exists() and not states[1].exists()
    stack.cli("edit", "--close", "--discard")
    assert not states[0].exists()
    stack.cli("status")


def test_a_rebase_continued_on_a_cache_that_lost_its_revisions_keeps_the_fix(tmp_path,
                                                                            monkeypatch):
    """A rebase stopped on a conflict; meanwhile the cache was emptied (or the next shell has
    another PATCHFORGE_CACHE). `rebase --continue` read the target as a tree without files and
    wrote the resolution as a patch creating calc.py, which the upstream has: the fix no longer
    applied anywhere, exit 0. The run's revisions are brought back first now, and the fix is
    the change it was."""
    from helpers.project import OneUpstreamStack

    calc = b"a = 1\nb = 2\nc = 3\n"
    stack = OneUpstreamStack(tmp_path, {"calc.py": calc})
    stack.add_fix("fix", "calc.py", calc, calc.replace(b"b = 2", b"b = 20"))
    target = stack.commit({"calc.py": calc.replace(b"b = 2", b"b = 200")}, "upstream moves")
    stack.cli("rebase", "--to", f"up={target}", expect=3)
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "emptied-cache"))
    (stack.root / ".patchforge/work/up/calc.py").write_bytes(b"a = 1\nb = 2000\nc = 3\n")
    stack.cli("rebase", "--continue")
    patch = stack.patch("up", "fix")
    assert b"new file" not in patch and b"-b = 200\n+b = 2000\n" in patch, patch.decode()
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(stack.up), str(checkout))
    subprocess.run(["git", "apply", "--check", "-"], cwd=checkout, input=patch, check=True)


def test_an_empty_rebases_range_diff_is_no_line_of_dashes(tmp_path):
    """A rebase of an empty series printed a range-diff header with nothing under it, and one
    whose every patch landed `1:  ------- < -:  ------- fa.patch`, dashes where git's range-diff
    puts commit ids: now an empty series on both sides prints no range-diff (the JSON's
    `range_diff` is empty), and one side empty a plain sentence."""
    from helpers.project import OneUpstreamStack

    empty = OneUpstreamStack(tmp_path / "empty", {"pkg/a.py": b"a = 1\n"})
    empty.commit({"pkg/a.py": b"a = 2\n"}, "Two", tag="v2")
    _, out, _ = empty.cli("rebase", "--to", "v2", "--dry-run")
    assert "range-diff" not in out and "nothing to do" in out, out
    assert empty.rebase_json("--to", "v2")["range_diff"] == ""
    landed = OneUpstreamStack(tmp_path / "landed", {"pkg/a.py": b"a = 1\n"})
    landed.add_fix("fa", "pkg/a.py", b"a = 1\n", b"a = 3\n")
    landed.commit({"pkg/a.py": b"a = 3\n"}, "Three (#1)", tag="v2")
    _, out, _ = landed.cli("rebase", "--to", "v2")
    assert "range-diff of the old series against the new one:\nup: the new series is empty, " \
        "nothing to compare fa.patch with\n" in out and "-------" not in out, out


def test_a_patch_file_whose_line_ends_were_converted_is_refused_before_any_work(stack, upstream):
    """A patch file an editor saved with CRLF line ends matches no LF file: the rebase stopped
    on it as a "conflict in pkg/other.py" with no conflict marker in the worktree (the target's
    file, the fix nowhere), and `--continue` set the fix aside as "resolved to no change".
    It is refused before anything starts, naming the patch file and its line, with the way
    back; converted back, the same rebase goes through."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "fix-f3", {"pkg/mod.py": with_lines({3: b"def f3():\n    return -3\n\n"})})
    original = stack.add_patch("up", "fix-x", {"pkg/other.py": b"x = 3\n"})
    path = stack.root / "series/up/fix-x.patch"
    path.write_bytes(original.replace(b"\n", b"\r\n"))
    new_commit = upstream.commit({"README": b"upstream 2\n"}, "unrelated change")
    before = snapshot(stack.root)
    rc, out, err = stack.cli("rebase", "--to", f"up={new_commit}", expect=2)
    line = original.split(b"\n").index(next(l for l in original.split(b"\n")
                                            if l.startswith(b"diff --git "))) + 1
    assert f"series/up/fix-x.patch:{line}: the patch file ends its lines in CRLF" in err, err
    assert "nothing was started" in err and "sed -i 's/\\r$//' series/up/fix-x.patch" in err
    assert "conflict" not in err
    assert snapshot(stack.root) == before
    path.write_bytes(original)
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["clean", "clean"]


def test_a_crlf_files_patch_with_crlf_headers_still_rebases(tmp_path):
    """A patch of a file with CRLF line ends of its own, saved by an editor that writes CRLF
    (`unix2dos` leaves the hunks' own CRLF lines as they are), applies as before: only a patch
    made on an LF file is refused for its converted line ends."""
    up = Upstream(tmp_path / "up", {"pkg/win.txt": b"one\r\ntwo\r\nthree\r\n",
                                    "README": b"upstream\n"})
    stack = Stack(tmp_path / "project")
    stack.add_upstream("up", up)
    original = stack.add_patch("up", "fix-win", {"pkg/win.txt": b"one\r\nTWO\r\nthree\r\n"})
    path = stack.root / "series/up/fix-win.patch"
    path.write_bytes(re.sub(rb"(?<!\r)\n", b"\r\n", original))
    stack.cli("status")
    new_commit = up.commit({"README": b"upstream 2\n"}, "unrelated change")
    summary = stack.rebase_json("--to", f"up={new_commit}")
    assert [p["action"] for p in summary["patches"]] == ["clean"]


def test_a_skipped_fix_whose_line_ends_were_converted_is_refused_by_bring_back(stack, upstream):
    """The hint of a refused bring-back sends the user to edit the fix in skipped/; an editor
    saving it with CRLF line ends made `bring-back` stop, exit 3, on a "conflict" with no
    marker in the worktree. It is refused, exit 2, naming skipped/'s file and its line,
    nothing written; converted back, the bring-back goes through."""
    stack.add_upstream("up", upstream)
    original = stack.add_patch("up", "fix-x", {"pkg/other.py": b"x = 3\n"})
    theirs = upstream.commit({"pkg/other.py": b"x = 2\n"}, "upstream's own x")
    stack.cli("rebase", "--to", f"up={theirs}", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    back = upstream.commit({"pkg/other.py": b"x = 1\n"}, "x as it was")
    stack.cli("rebase", "--to", f"up={back}", expect=None)
    skipped = stack.root / "series/up/skipped/fix-x.patch"
    kept = skipped.read_bytes()
    skipped.write_bytes(kept.replace(b"\n", b"\r\n"))
    before = snapshot(stack.root)
    rc, out, err = stack.cli("bring-back", "fix-x", expect=2)
    assert "series/up/skipped/fix-x.patch:" in err and "ends its lines in CRLF" in err, err
    assert "sed -i 's/\\r$//' series/up/skipped/fix-x.patch" in err
    assert "`patchforge bring-back fix-x` again" in err and "conflict" not in err
    assert snapshot(stack.root) == before
    skipped.write_bytes(kept)
    stack.cli("bring-back", "fix-x")
    assert stack.series("up") == ["fix-x.patch"]
    assert stack.patch("up", "fix-x") != original and b"+x = 3" in stack.patch("up", "fix-x")
