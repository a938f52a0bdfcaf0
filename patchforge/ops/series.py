"""The quilt-like loop: list, show, new, edit, refresh, delete, rename, move.

`edit NAME` makes the editing worktree (patchforge/worktree.py) for NAME: its files, and those
the user adds (`edit --file`, `add`); `refresh` turns the difference between its HEAD and its
working files back into NAME's diff, keeping its header, then removes it.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

from patchforge.apply.series import apply_series
from patchforge.stack import series_changed
from patchforge.errors import UsageError
from patchforge.formats.patchfile import parse_patch_file, render_patch_file
from patchforge.fsutil import RepoLock, atomic_delete, atomic_write
from patchforge.project import patch_file_name
from patchforge.store.git import run_git
from patchforge.worktree import close_worktree, editing, state_file, worktree_diff


def today() -> str:
    fixed = os.environ.get("PATCHFORGE_DATE")  # reproducible output in tests and golden files
    return fixed or _dt.date.today().isoformat()


def default_author() -> str:
    name = os.environ.get("GIT_AUTHOR_NAME")
    email = os.environ.get("GIT_AUTHOR_EMAIL")
    if not (name and email):
        def cfg(key):
            out = run_git("config", "--get", key, user_config=True, ok=None)
            return out.stdout.decode("utf-8", "replace").strip() or None
        name = name or cfg("user.name") or "Unknown"
        email = email or cfg("user.email") or "unknown@localhost"
    return f"{name} <{email}>"


@dataclass(frozen=True)
class PatchSummary:
    upstream: str
    name: str
    subject: str
    status: str | None
    profiles: str | None
    files: tuple[str, ...]
    added: int
    removed: int


def list_series(project) -> list[PatchSummary]:
    from patchforge.apply.stats import diffstat

    out = []
    for upstream, name in project.all_patches():
        patch = project.read_patch(upstream, name)
        stats = diffstat(patch.diff)
        out.append(PatchSummary(
            upstream=upstream, name=name, subject=patch.subject or "",
            status=patch.get("Upstream-Status"), profiles=patch.get("Profiles"),
            files=tuple(path for path, _, _ in stats),
            added=sum(a for _, a, _ in stats), removed=sum(r for _, _, r in stats)))
    return out


def show_patch(project, name: str) -> dict:
    from patchforge.apply.stats import diffstat

    upstream, file_name = project.find_patch(name)
    patch = project.read_patch(upstream, file_name)
    raw = project.read_patch_bytes(upstream, file_name)
    return {
        "upstream": upstream, "name": file_name,
        "path": str(project.patch_path(upstream, file_name).relative_to(project.root)),
        "subject": patch.subject or "",
        "header": [{"name": f.name, "value": f.value} for f in patch.fields],
        "description": patch.description.decode("utf-8", "replace"),
        "files": [{"path": p, "added": a, "removed": r} for p, a, r in diffstat(patch.diff)],
        "sha256": __import__("hashlib").sha256(raw).hexdigest(),
        "raw": raw,
        "diff": patch.diff,
    }


def add_to_open_worktree(project, store, paths, *, upstream: str | None = None):
    """`patchforge add PATH...` into the open worktree (an edit's or a stopped rebase's):
    (the worktree, the paths newly tracked)."""
    from patchforge.rebase.journal import Journal
    from patchforge.worktree import add_to_worktree

    journal = Journal(project.state_dir)
    stopped = journal.load().get("stopped") if journal.exists() else None
    return add_to_worktree(project, store, paths, upstream=upstream, stopped=stopped)


def refresh(project, store, name: str | None = None) -> dict:
    """Write the worktree's change back into the patch, keeping its header; the worktree is
    then removed (everything in it is in the patch; `edit` makes it again in a moment)."""
    upstream, file_name = _edited_patch(project, name)
    state = editing(project, upstream)
    diff, changes = worktree_diff(project, store, upstream, state, with_changes=True)
    path = project.patch_path(upstream, file_name)
    patch = project.read_patch(upstream, file_name)
    if _same_change(store, state["base"], patch, changes):
        # The worktree holds exactly what the patch already does: keep its bytes (it may have
        # been written by another tool, with abbreviated index lines or other context).
        diff = patch.diff
    new_patch = patch.with_diff(diff)
    if new_patch.diff != patch.diff:
        new_patch = new_patch.with_field("Last-Update", today())
    data = new_patch.to_bytes()
    parse_patch_file(data, str(path))  # never write what we could not read back
    changed = data != project.read_patch_bytes(upstream, file_name)
    with RepoLock(project.state_dir):
        if changed:
            atomic_write(path, data)
        series_changed(project)
        close_worktree(project, upstream)
    later = check_later_patches(project, store, upstream, file_name)
    return {"upstream": upstream, "name": file_name, "changed": changed,
            "files": [c[0] for c in changes], "later_failing": later}


def _same_change(store, base: str, patch, changes) -> bool:
    """True when `patch` applies exactly on `base` and gives the worktree's files (same paths,
    same bytes, no mode change)."""
    from patchforge.errors import PatchforgeError

    if any(old_mode != new_mode for _, old, new, old_mode, new_mode in changes
           if old is not None and new is not None):
        return False
    try:
        applied = apply_series(lambda paths: store.read_blobs(base, paths), [("patch", patch)],
                               strict=True, max_fuzz=0)
    except PatchforgeError:
        return False
    if applied.outcomes and applied.outcomes[0].worst != "exact":
        return False
    got = {p: c for p, c in applied.current.items() if c != applied.base.get(p)}
    return got == {path: new for path, _, new, _, _ in changes}


def _edited_patch(project, name: str | None) -> tuple[str, str]:
    if name:
        upstream, file_name = project.find_patch(name)
        state = editing(project, upstream)
        if not state or state["patch"] != file_name:
            raise UsageError(f"{file_name} is not being edited", hint=f"run `patchforge edit {name}`")
        return upstream, file_name
    active = [(u, editing(project, u)) for u in project.upstream_names()]
    active = [(u, s) for u, s in active if s]
    if not active:
        raise UsageError("no patch is being edited", hint="run `patchforge edit NAME` first")
    if len(active) > 1:
        raise UsageError("several patches are being edited: " +
                         ", ".join(f"{u}/{s['patch']}" for u, s in active) + "; name one")
    return active[0][0], active[0][1]["patch"]


def check_later_patches(project, store, upstream: str, file_name: str) -> list[str]:
    """Names of patches after `file_name` that no longer apply on the series before them."""
    pin = project.lock.pin(upstream)
    names = project.patch_names(upstream)
    patches = [(n, project.read_patch(upstream, n)) for n in names]

    def read_base(paths):
        return store.read_blobs(pin.commit, paths)

    state = apply_series(read_base, patches, strict=False)
    index = names.index(file_name)
    return [o.name for o in state.outcomes[index + 1:] if not o.ok]


# --- series edits -----------------------------------------------------------------------------

def new_patch(project, name: str, *, upstream: str | None = None, after: str | None = None,
              description: str | None = None, profiles: str | None = None) -> tuple[str, str]:
    upstreams = project.upstream_names()
    if upstream is None:
        if not upstreams:
            raise UsageError("no upstream is configured",
                             hint="run `patchforge upstream add NAME ... --at SPEC` first")
        if len(upstreams) != 1:
            raise UsageError("several upstreams are configured; say which with --upstream")
        upstream = upstreams[0]
    project.config.upstream(upstream)
    file_name = patch_file_name(name)
    if "/" in name or name.startswith((".", "-")):
        raise UsageError(f"bad patch name {name!r}")
    if any(n == file_name for _, n in project.all_patches()) or \
            project.patch_path(upstream, file_name).exists():
        raise UsageError(f"a patch named {file_name} already exists")
    pin = project.lock.pin(upstream)
    fields = [("Description", description or name), ("Author", default_author()),
              ("Upstream-Status", "Pending"), ("Upstream", upstream), ("Base", pin.commit)]
    if profiles:
        fields.append(("Profiles", profiles))
    fields.append(("Last-Update", today()))
    data = render_patch_file(fields, b"", b"")
    with RepoLock(project.state_dir, wait=10):
        # Read the series under the lock: two `new` at once must not lose an entry.
        series = project.read_series(upstream)
        if after is not None:
            after = patch_file_name(after)
            if after not in series.names:
                raise UsageError(f"no patch named {after} in the {upstream} series")
        if file_name in series.names or project.patch_path(upstream, file_name).exists():
            raise UsageError(f"a patch named {file_name} already exists")
        new_series = series.inserted(file_name, after=after)
        atomic_write(project.patch_path(upstream, file_name), data)
        atomic_write(project.series_path(upstream), new_series.to_bytes())
        series_changed(project)
    return upstream, file_name


def delete_patch(project, name: str) -> Path:
    """Take a patch out of the series; the file is kept under series/<upstream>/deleted/."""
    upstream, file_name = project.find_patch(name)
    source = project.patch_path(upstream, file_name)
    kept = project.series_dir(upstream) / "deleted" / file_name
    data = source.read_bytes()
    with RepoLock(project.state_dir):
        # Copy first, then unlist, then remove: a kill at any point loses nothing.
        atomic_write(kept, data)
        atomic_write(project.series_path(upstream),
                     project.read_series(upstream).removed(file_name).to_bytes())
        atomic_delete(source)
        state = editing(project, upstream)
        if state and state["patch"] == file_name:
            atomic_delete(state_file(project, upstream))
        series_changed(project)
    return kept


def rename_patch(project, old: str, new: str) -> tuple[str, str]:
    upstream, old_file = project.find_patch(old)
    new_file = patch_file_name(new)
    if "/" in new or new.startswith((".", "-")):
        raise UsageError(f"bad patch name {new!r}")
    if project.patch_path(upstream, new_file).exists():
        raise UsageError(f"{new_file} already exists")
    data = project.read_patch_bytes(upstream, old_file)
    with RepoLock(project.state_dir):
        atomic_write(project.patch_path(upstream, new_file), data)
        atomic_write(project.series_path(upstream),
                     project.read_series(upstream).renamed(old_file, new_file).to_bytes())
        atomic_delete(project.patch_path(upstream, old_file))
        state = editing(project, upstream)
        if state and state["patch"] == old_file:
            state["patch"] = new_file
            atomic_write(state_file(project, upstream),
                         (json.dumps(state, indent=2) + "\n").encode())
        series_changed(project)
    return upstream, new_file


def move_patch(project, store, name: str, *, after: str | None = None,
               first: bool = False) -> list[str]:
    """Move NAME after X (or first). Returns patches that no longer apply after the move."""
    upstream, file_name = project.find_patch(name)
    series = project.read_series(upstream)
    if after is not None:
        after = patch_file_name(after)
        if after not in series.names:
            raise UsageError(f"no patch named {after} in the {upstream} series")
        if after == file_name:
            raise UsageError("cannot move a patch after itself")
    elif not first:
        raise UsageError("say where: --after X or --first")
    moved = series.removed(file_name).inserted(file_name, after=after, first=first)
    with RepoLock(project.state_dir):
        atomic_write(project.series_path(upstream), moved.to_bytes())
        series_changed(project)
    if store is None:
        return []
    pin = project.lock.pin(upstream)
    patches = [(n, project.read_patch(upstream, n)) for n in moved.names]
    state = apply_series(lambda paths: store.read_blobs(pin.commit, paths), patches, strict=False)
    return [o.name for o in state.outcomes if not o.ok]
