"""A file upstream moved unchanged keeps its new name: a series file upstream deleted beside
it is not followed there.

`git rebase` (merge-ort) pairs exact renames among all the files a range deletes first, then
weighs only the files the replayed commits change against the added files left. Where the
series' file is deleted and a near copy of it (not in the series) is moved unchanged, the
copy's new name is its exact rename: the series file is gone, not renamed, and its fix stops
modify/delete, as `git rebase` stops. Where the copy is moved with a change, git pairs the
series file there too, and so does patchforge."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import OneUpstreamStack, add_git_upstream, make_project
from helpers.upstream import Upstream, dep3_patch
from patchforge.store.diff import make_file_diff

LEGACY = "pkg/legacy_impl.py"
OLD, NEW = "pkg/old_impl.py", "pkg/new_impl.py"


def _impl(changed: int | None = None) -> bytes:
    return "".join(f"def f{i}(x):\n    return x + {i * 10 if i == changed else i}\n\n"
                   for i in range(1, 21)).encode()


def _setup(tmp_path: Path, moved: bytes) -> tuple[Path, str]:
    upstream = Upstream(tmp_path / "upstream", {OLD: _impl(), LEGACY: _impl(7)})
    root = make_project(tmp_path / "project")
    add_git_upstream(tmp_path / "project", "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    fixed = _impl(7).replace(b"return x + 3\n", b"return x + 3  # fixed\n")
    (directory / "fix.patch").write_bytes(dep3_patch(make_file_diff(LEGACY, LEGACY, _impl(7),
                                                                    fixed)))
    (directory / "series").write_text("fix.patch\n")
    target = upstream.commit({LEGACY: None, OLD: None, NEW: moved},
                             "drop the legacy impl; rename old_impl")
    return root, target


def _state(root: Path, target: str) -> dict:
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    assert proc.returncode in (0, 1), proc.stderr.decode(errors="replace")
    [found] = json.loads(proc.stdout)["patches"]
    return found


def test_a_deleted_series_file_does_not_take_the_new_name_of_a_file_moved_unchanged(tmp_path):
    """Before: "was renamed upstream to pkg/new_impl.py" and `rebase --to` exit 0 carrying
    the fix into the other file's new name; now gone upstream (deleted, not renamed) and the
    rebase stops modify/delete, as `git rebase` does."""
    root, target = _setup(tmp_path, _impl())
    found = _state(root, target)
    assert found["state"] != "applies", found
    assert any("deleted, not renamed" in line for line in found["evidence"]), found
    assert not any(NEW in line for line in found["evidence"]), found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    said = rebase.stdout.decode(errors="replace") + rebase.stderr.decode(errors="replace")
    assert rebase.returncode == 3, said
    assert "CONFLICT (modify/delete)" in said and NEW not in said, said
    assert f"+++ b/{LEGACY}".encode() in (root / "series" / "up" / "fix.patch").read_bytes()


def test_a_deleted_series_file_follows_a_near_copy_moved_with_a_change(tmp_path):
    """The neighbour: the copy moved WITH a change is no exact rename, so git pairs the
    series file (its relevant source) with it, and `git rebase` carries the fix there:
    followed, as before."""
    root, target = _setup(tmp_path, _impl() + b"# moved\n")
    found = _state(root, target)
    assert found["state"] == "applies", found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 0, rebase.stderr.decode(errors="replace")
    assert f"+++ b/{NEW}".encode() in (root / "series" / "up" / "fix.patch").read_bytes()


def test_an_empty_series_file_upstream_deleted_is_not_followed_to_another_empty_file(tmp_path):
    """Upstream removes a package (its empty `__init__.py` with it) and adds another, whose
    `__init__.py` is empty too: identical contents, which git's diff pairs as an exact rename
    by default. merge-ort never pairs an empty file, so `git rebase` stops modify/delete on a
    fix to the removed `__init__.py`. Before: "was renamed upstream to pkg/quant/__init__.py",
    and `rebase --to` exit 0 carrying the fix into the other package; now gone upstream and
    the rebase stops, as `git rebase` does."""
    gone, other = "pkg/ops/__init__.py", "pkg/quant/__init__.py"
    upstream = Upstream(tmp_path / "upstream", {"pkg/__init__.py": b"", gone: b"",
                                                "pkg/ops/fused.py": _impl()})
    root = make_project(tmp_path / "project")
    add_git_upstream(tmp_path / "project", "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "fix.patch").write_bytes(dep3_patch(make_file_diff(
        gone, gone, b"", b'import os\nos.environ.setdefault("OPS_FUSED_BACKEND", "triton")\n')))
    (directory / "series").write_text("fix.patch\n")
    target = upstream.commit({gone: None, "pkg/ops/fused.py": None, other: b"",
                              "pkg/quant/fp8.py": _impl(3)}, "ops removed; quant added")
    found = _state(root, target)
    assert found["state"] != "applies", found
    assert any("deleted, not renamed" in line for line in found["evidence"]), found
    assert not any(other in line for line in found["evidence"]), found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    said = rebase.stdout.decode(errors="replace") + rebase.stderr.decode(errors="replace")
    assert rebase.returncode == 3, said
    assert "CONFLICT (modify/delete)" in said and other not in said, said
    assert f"+++ b/{gone}".encode() in (root / "series" / "up" / "fix.patch").read_bytes()


FUNCTIONS = b"".join(b"def fn_%d(value):\n    return value * %d + 17\n\n" % (i, i)
                    for i in range(40))


def where_a_fix_follows(tmp_path: Path, path: str, others: dict[str, bytes],
                        target: dict[str, bytes | None],
                        renames: dict[str, str] | None = None) -> dict:
    """`status --against` v2 of a fix to `path` (FUNCTIONS, its `fn_30` changed) on an upstream
    of it and `others`, v2 committing `target` (and `renames`): the fix's --json entry."""
    stack = OneUpstreamStack(tmp_path, {path: FUNCTIONS, **others})
    stack.add_fix("fix", path, FUNCTIONS,
                  FUNCTIONS.replace(b"value * 30 + 17", b"value * 30 + 18"))
    stack.upstream.commit(target, "v2", renames, tag="v2")
    _, out, _ = stack.cli("status", "--against", "up=v2", "--json", expect=None)
    [found] = json.loads(out)["patches"]
    return found


def _followed_beside_a_namesake(tmp_path) -> dict:
    """`status --against` of a fix to a/x.py, where upstream deleted a/x.py and an unrelated
    z/x.py, added b/x.py (a/x.py with one line in twenty edited) and d/y.py (a/x.py with one
    line edited): `git rebase` carries the fix to d/y.py (its exhaustive pairing, x.py being
    no unique name among the deleted files)."""
    lines = FUNCTIONS.splitlines(keepends=True)
    near = b"".join(line[:-1] + b"  # changed in b\n" if i % 20 == 1 else line
                    for i, line in enumerate(lines))
    nearer = FUNCTIONS.replace(b"def fn_1(value):\n", b"def fn_1(value): # tiny\n")
    other = b"".join(b'CONST_%d = "%d"\n' % (i, i * i) for i in range(120))
    return where_a_fix_follows(tmp_path, "a/x.py", {"z/x.py": other, "keep.py": b"k = 1\n"},
                               {"a/x.py": None, "z/x.py": None, "b/x.py": near, "d/y.py": nearer})


def test_a_file_is_followed_where_git_rebase_follows_it_beside_a_deleted_namesake(tmp_path):
    found = _followed_beside_a_namesake(tmp_path)
    assert [f["target_path"] for f in found["files"]] == ["d/y.py"], \
        "git rebase: the fix lands in d/y.py"


OTHERS = {f"ops/{n}.py": b"".join(b"def %s_%d():\n    return %d\n\n" % (n.encode(), i, i)
                                  for i in range(30)) for n in "abc"}
TEST_COPY = FUNCTIONS.replace(b"def fn_1(value):\n", b"def fn_1(value): # test copy\n")


def _reworked(every: int) -> bytes:
    """FUNCTIONS with one line in `every` changed."""
    return b"".join(line[:-1] + b"  # reworked\n" if i % every == 1 else line
                    for i, line in enumerate(FUNCTIONS.splitlines(keepends=True)))


def _beside_a_namesake(tmp_path: Path, reworked: bytes, also: dict[str, bytes] | None = None
                       ) -> tuple[OneUpstreamStack, dict]:
    """A fix of ops/x.py; upstream's v2 moves ops/a.py, b.py, c.py unchanged to kernels/,
    makes kernels/x.py (`reworked`) and tests/x.py (ops/x.py with one line edited), deletes
    ops/x.py: the stack and status's --json entry of the fix."""
    stack = OneUpstreamStack(tmp_path, {"ops/x.py": FUNCTIONS, **OTHERS, **(also or {})})
    stack.add_fix("fix", "ops/x.py", FUNCTIONS,
                  FUNCTIONS.replace(b"value * 30 + 17", b"value * 30 + 18"))
    stack.upstream.commit({"ops/x.py": None, "kernels/x.py": reworked, "tests/x.py": TEST_COPY},
                          "v2", {p: "kernels/" + p[4:] for p in OTHERS}, tag="v2")
    _, out, _ = stack.cli("status", "--against", "up=v2", "--json", expect=None)
    [found] = json.loads(out)["patches"]
    return stack, found


def _rebased_into(stack: OneUpstreamStack) -> list[str]:
    stack.cli("rebase", "--to", "up=v2")
    text = (stack.root / "series" / "up" / "fix.patch").read_text()
    return [line[6:] for line in text.splitlines() if line.startswith("+++ b/")]


def test_a_file_of_a_renamed_directory_follows_the_directory_beside_an_added_namesake(
        tmp_path):
    """merge-ort's base-name pass: x.py is no unique name among the added files, so `git
    rebase` guesses where ops/ went (kernels/, where its files moved unchanged) and weighs
    kernels/x.py (one line in twelve changed, nearer than 75%): the fix goes there. It
    followed tests/x.py, nearer by git's diff, `applies`, the rebase clean, exit 0."""
    stack, found = _beside_a_namesake(tmp_path, _reworked(12))
    assert found["state"] == "applies" and \
        [f["target_path"] for f in found["files"]] == ["kernels/x.py"], found
    assert _rebased_into(stack) == ["kernels/x.py"]


def test_a_directory_upstream_did_not_remove_gives_no_guess(tmp_path):
    """The mirror: ops/stay.py stays, so ops/ is no renamed directory and `git rebase` pairs
    by nearness alone: tests/x.py."""
    stack, found = _beside_a_namesake(tmp_path, _reworked(12), {"ops/stay.py": b"s = 1\n"})
    assert [f["target_path"] for f in found["files"]] == ["tests/x.py"], found
    assert _rebased_into(stack) == ["tests/x.py"]


def test_a_guessed_file_too_far_from_the_file_gives_way_to_the_nearest(tmp_path):
    """The mirror: kernels/x.py with one line in three changed is farther than the base-name
    pass takes (75%), so `git rebase` pairs by nearness: tests/x.py."""
    stack, found = _beside_a_namesake(tmp_path, _reworked(3))
    assert [f["target_path"] for f in found["files"]] == ["tests/x.py"], found
    assert _rebased_into(stack) == ["tests/x.py"]
