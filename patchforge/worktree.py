"""The editing worktree of an upstream: `.patchforge/work/<upstream>`, a git checkout (objects
shared with the store through alternates, so nothing is copied) whose HEAD is the upstream with the
series applied up to just before the patch being edited, and whose working files carry that patch;
`worktree_diff` turns the difference back into a diff. `edit`/`refresh` and a stopped rebase use it.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from patchforge.apply.series import apply_series
from patchforge.errors import ApplyError, InputError, UsageError
from patchforge.fsutil import atomic_delete, atomic_write
from patchforge.stack import refuse_symlinked_paths
from patchforge.store.diff import FileChange, make_diff
from patchforge.store.git import run_git


def _git(cwd: Path, *args: str, input: bytes | None = None, env_extra=None,
         ok: tuple[int, ...] = (0,)) -> bytes:
    proc = run_git(*args, cwd=cwd, input=input, env=env_extra, ok=None)
    if proc.returncode not in ok:
        raise UsageError(f"git {' '.join(args[:2])} failed in {cwd}: "
                         f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


def state_file(project, upstream: str) -> Path:
    return project.state_dir / "work" / f"{upstream}.json"


def editing(project, upstream: str) -> dict | None:
    path = state_file(project, upstream)
    return json.loads(path.read_text()) if path.exists() else None


def _series_prefix(project, upstream: str, file_name: str):
    names = project.patch_names(upstream)
    index = names.index(file_name)
    return [(n, project.read_patch(upstream, n)) for n in names[:index]]


def open_worktree(project, store, name: str) -> Path:
    """Materialize the editing worktree for NAME (series applied through NAME)."""
    upstream, file_name = project.find_patch(name)
    pin = project.lock.pin(upstream)
    work = project.work_dir(upstream)
    current = editing(project, upstream)
    if current and current["patch"] != file_name and work.exists() and \
            unrefreshed(project, store, upstream, current):
        raise UsageError(f"{upstream}: {current['patch']} is being edited and has changes that "
                         "were not refreshed", hint="run `patchforge refresh` first")

    def read_base(paths):
        return store.read_blobs(pin.commit, paths)

    prefix = _series_prefix(project, upstream, file_name)
    patch = project.read_patch(upstream, file_name)
    # The worktree is written on disk: nothing may go through an upstream symlink.
    refuse_symlinked_paths(store, pin.commit, prefix + [(file_name, patch)])
    before = apply_series(read_base, prefix, strict=True)
    modes = {fp.new_path: fp.new_mode for _, p in prefix for fp in p.file_patches
             if fp.new_path and fp.new_mode and before.current.get(fp.new_path) is not None}
    before_commit = store.commit_files(pin.commit, dict(before.current), modes=modes,
                                       message=f"{upstream}: series before {file_name}")
    before_files = dict(before.current)  # apply_series below extends `before` in place
    new_modes = {fp.new_path: fp.new_mode for fp in patch.file_patches
                 if fp.new_path and fp.new_mode}
    through = apply_series(read_base, [(file_name, patch)], strict=False, state=before)
    failed = [o for o in through.outcomes[-1:] if not o.ok]
    prepare_checkout(store, work, before_commit)
    for path, content in through.current.items():
        if path in before_files and before_files[path] == content:
            continue
        if path not in before_files and content == through.base.get(path):
            continue  # read for this patch and left as the upstream has it
        target = work / path
        if content is None:
            if target.exists():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    for path, mode in new_modes.items():
        target = work / path
        if target.is_file() and not target.is_symlink():
            # A mode-only change has no content to write; without this it would be lost.
            os.chmod(target, 0o755 if mode == "100755" else 0o644)
    state = {"patch": file_name, "base": before_commit, "pin": pin.commit}
    atomic_write(state_file(project, upstream), (json.dumps(state, indent=2) + "\n").encode())
    if failed:
        raise ApplyError(f"{file_name} does not apply cleanly on the series before it; the "
                         f"worktree {work} has the parts that applied",
                         hint="fix the files there, then `patchforge refresh`")
    return work


def prepare_checkout(store, work: Path, commit: str) -> None:
    """A checkout of `commit` in `work`, sharing the store's objects (no copy).

    The store of a git upstream is a blob-less partial mirror, so the checkout repository is
    made a partial clone of the same promisor remotes: git then fetches the blobs the checkout
    needs in one batch (into the worktree's own objects), where a plain alternate would fail.
    """
    if not (work / ".git").exists():
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        _git(work, "init", "-q")
        # Build products made while testing a fix (python -m py_compile, pytest) are not part
        # of it: keep them out of what refresh and rebase --continue take.
        exclude = work / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
        alternates = work / ".git" / "objects" / "info" / "alternates"
        alternates.write_text(str(Path(store.git_dir).resolve() / "objects") + "\n")
    _share_promisors(store, work)
    _git(work, "update-ref", "refs/heads/patchforge-base", commit)
    _git(work, "symbolic-ref", "HEAD", "refs/heads/patchforge-base")
    _git(work, "reset", "-q", "--hard", commit)
    _git(work, "clean", "-q", "-fdx")


def _share_promisors(store, work: Path) -> None:
    """Copy the store's promisor remotes (url, filter, upload-pack) into the checkout's config."""
    out = _git(Path(store.git_dir), "--git-dir", str(store.git_dir), "config", "-z",
               "--get-regexp", r"^remote\..*\.(url|promisor|partialclonefilter|uploadpack)$",
               ok=(0, 1))
    settings = []
    for record in out.split(b"\0"):
        if record:
            key, _, value = record.decode("utf-8", "surrogateescape").partition("\n")
            settings.append((key, value))
    promisors = [k[len("remote."):-len(".promisor")] for k, v in settings
                 if k.endswith(".promisor") and v.lower() in ("true", "1", "yes", "on")]
    if not promisors:
        return
    for key, value in settings:
        _git(work, "config", key, value)
    _git(work, "config", "core.repositoryformatversion", "1")
    _git(work, "config", "extensions.partialClone", promisors[0])


def close_worktree(project, upstream: str) -> None:
    """Forget the editing worktree of `upstream` (its state file first, then the checkout)."""
    atomic_delete(state_file(project, upstream))
    work = project.work_dir(upstream)
    if work.exists():
        shutil.rmtree(work)


def unrefreshed(project, store, upstream: str, state: dict) -> bool:
    """True when the worktree holds edits that its patch file does not have yet."""
    if state["patch"] not in project.patch_names(upstream):
        return False
    return worktree_diff(project, store, upstream, state) != \
        project.read_patch(upstream, state["patch"]).diff


def changed_paths(work: Path, base: str) -> list[str]:
    _git(work, "add", "-A")
    out = _git(work, "diff", "--cached", "--no-renames", "--name-only", "-z", base)
    return sorted(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)


def worktree_diff(project, store, upstream: str, state: dict, *, with_changes=False):
    """git's diff from the worktree's base commit to its working files."""
    work = project.work_dir(upstream)
    base = state["base"]
    changes = []
    for path in changed_paths(work, base):
        old = store.read_blob(base, path)
        disk = work / path
        if disk.is_symlink():
            raise InputError(f"{path} is a symlink in the worktree; patches carry files only",
                             path=str(disk))
        new = disk.read_bytes() if disk.is_file() else None
        mode_new = "100755" if new is not None and os.access(disk, os.X_OK) else "100644"
        mode_old = store.entry(base, path)[0] if old is not None else mode_new
        changes.append((path, old, new, mode_old, mode_new))
    diff = make_diff(FileChange.at(*change) for change in changes)
    return (diff, changes) if with_changes else diff
