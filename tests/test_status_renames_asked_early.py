"""git's rename pairing of the series' files is asked before the series is parsed.

On a long history the pairing is the question the first patches wait for (0.85 s of git's CPU
on AITER's 2,515-commit row), so `status --against` asks it of the paths the patch files'
headers name (diffparse.glanced_old_paths) as soon as the target is known, while the series
is parsed. The judge's own question, asked once the series is parsed, is answered by that run
when both ask of the same gone files and asked anew when they do not: the headers read at a
glance decide when git is asked, never what a file's new place is."""
from __future__ import annotations

import json

from helpers.cli import run_subprocess
from helpers.project import add_git_upstream, make_project
from helpers.upstream import Upstream, dep3_patch
from patchforge.apply.diffparse import glanced_old_paths
from patchforge.formats.patchfile import parse_patch_file
from patchforge.store.diff import make_file_diff


def _impl(changed: int | None = None) -> bytes:
    return "".join(f"def f{i}(x):\n    return x + {i * 10 if i == changed else i}\n\n"
                   for i in range(1, 21)).encode()


def _fixed(text: bytes, line: int, mark: str) -> bytes:
    return text.replace(f"return x + {line}\n".encode(), f"return x + {line}  # {mark}\n".encode())


D = b"one\ntwo\nthree\n"


def _parsed_old_paths(data: bytes) -> set[str]:
    return {fp.source_path for fp in parse_patch_file(data, "p.patch").file_patches
            if not fp.is_new}


def test_the_headers_read_at_a_glance_name_the_files_the_parse_finds():
    """Each section shape git writes: a change, a creation (not a source), a deletion, a
    rename with and without a change, a copy, a mode change alone, a binary change, and a
    patch of its header alone (no file): the glance reads the paths the parse does."""
    sections = [
        make_file_diff("pkg/a.py", "pkg/a.py", _impl(), _fixed(_impl(), 3, "fix")),
        make_file_diff(None, "pkg/new.py", None, b"new\n"),
        make_file_diff("pkg/gone.py", None, b"old\n", None),
        make_file_diff("pkg/from.py", "pkg/to.py", _impl(), _impl()),
        make_file_diff("pkg/moved.py", "pkg/there.py", _impl(), _fixed(_impl(), 5, "fix")),
        make_file_diff("pkg/run.sh", "pkg/run.sh", b"x\n", b"x\n", new_mode="100755"),
        make_file_diff("pkg/blob.bin", "pkg/blob.bin", b"\0one", b"\0two"),
        make_file_diff("dir with space/f.txt", "dir with space/f.txt", D, D + b"four\n"),
    ]
    data = dep3_patch(b"".join(sections))
    assert glanced_old_paths(data) == _parsed_old_paths(data) == {
        "pkg/a.py", "pkg/gone.py", "pkg/from.py", "pkg/moved.py", "pkg/run.sh",
        "pkg/blob.bin", "dir with space/f.txt"}
    copy = (b"diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 100%\ncopy from pkg/a.py\n"
            b"copy to pkg/b.py\n")
    assert glanced_old_paths(copy) == _parsed_old_paths(copy) == {"pkg/a.py"}
    header = dep3_patch(b"")
    assert glanced_old_paths(header) == _parsed_old_paths(header) == set()


def test_headers_not_read_at_a_glance_leave_the_question_to_the_parse():
    """A quoted name and a diff without `diff --git` headers are not guessed at."""
    quoted = make_file_diff("pkg/tab\tname.py", "pkg/tab\tname.py", D, D + b"four\n")
    assert b'"a/pkg/tab\\tname.py"' in quoted
    assert glanced_old_paths(dep3_patch(quoted)) is None
    plain = b"--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-one\n+ONE\n"
    assert glanced_old_paths(dep3_patch(plain)) is None


def test_a_file_the_glance_misses_is_paired_as_the_whole_series_asks(tmp_path):
    """p1's patch changes pkg/d.txt in a git section and pkg/a.py in a plain one after it,
    which the glance does not read, so the early question is asked of b.py alone (the one gone
    file it names) and git pairs b.py with pkg/c.py. The series' own question asks of a.py and
    b.py: c.py is a.py's (the nearer), b.py deleted. Both answers stand as the whole series'
    question gives them: p1 carried to c.py, p3 obsolete (not carried into c.py beside it)."""
    upstream = Upstream(tmp_path / "upstream", {"pkg/a.py": _impl(), "pkg/b.py": _impl(9),
                                                "pkg/d.txt": D})
    root = make_project(tmp_path / "project")
    add_git_upstream(tmp_path / "project", "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    plain_a = make_file_diff("pkg/a.py", "pkg/a.py", _impl(), _fixed(_impl(), 3, "p1"))
    plain_a = plain_a[plain_a.index(b"\n--- ") + 1:]
    p1 = dep3_patch(make_file_diff("pkg/d.txt", "pkg/d.txt", D, D + b"four\n") + plain_a)
    p3 = dep3_patch(make_file_diff("pkg/b.py", "pkg/b.py", _impl(9), _fixed(_impl(9), 15, "p3")))
    assert glanced_old_paths(p1) == {"pkg/d.txt"}
    assert _parsed_old_paths(p1) == {"pkg/d.txt", "pkg/a.py"}
    (directory / "p1.patch").write_bytes(p1)
    (directory / "p3.patch").write_bytes(p3)
    (directory / "series").write_text("p1.patch\np3.patch\n")
    target = upstream.commit({"pkg/a.py": None, "pkg/c.py": _impl(20), "pkg/b.py": None},
                             "a -> c; drop b")
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    assert proc.returncode in (0, 1), proc.stderr.decode(errors="replace")
    patches = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    files = {f["path"]: f["target_path"] for name in ("p1.patch", "p3.patch")
             for f in patches[name]["files"]}
    assert files == {"pkg/d.txt": "pkg/d.txt", "pkg/a.py": "pkg/c.py", "pkg/b.py": None}, files
    assert patches["p3.patch"]["state"] == "obsolete", patches["p3.patch"]
    # The answer the series' question gives (the same asked again from the cache).
    again = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    assert json.loads(again.stdout)["patches"] == json.loads(proc.stdout)["patches"]
