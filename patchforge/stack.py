"""A series as the operations handle it: applied on a pin (`series_state`), a new entry written
with its patch file (`add_to_series`), the ledger kept in step (`series_changed`), and the paths
no patch may touch (`refuse_symlinked_paths`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from patchforge.apply.diffparse import SYMLINK
from patchforge.apply.hunks import apply_file_patch
from patchforge.apply.series import apply_series
from patchforge.errors import InputError, UnsafePathError
from patchforge.fsutil import atomic_write

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore


def series_state(project: Project, store: UpstreamStore, upstream: str, *, upto: int | None = None,
                 commit=None, strict: bool = True):
    """The upstream's touched files with its series (or its first `upto` patches) applied."""
    commit = commit or project.lock.pin(upstream).commit
    names = project.patch_names(upstream)
    if upto is not None:
        names = names[:upto]
    patches = [(n, project.read_patch(upstream, n)) for n in names]
    return apply_series(lambda paths: store.read_blobs(commit, paths), patches, strict=strict)


def add_to_series(project: Project, upstream: str, file_name: str, data: bytes) -> None:
    """Write a new patch file, then list it (the order means a kill never lists a missing file)."""
    atomic_write(project.patch_path(upstream, file_name), data)
    series = project.read_series(upstream)
    atomic_write(project.series_path(upstream), series.inserted(file_name).to_bytes())


def series_changed(project: Project) -> None:
    """Keep the generated ledger (series/PATCHES.md) in step after a command changed the series."""
    from patchforge.ledger import update_ledger

    update_ledger(project)


def refuse_symlinked_paths(store: UpstreamStore, commit: str, patches) -> None:
    """Refuse any patch that touches a path which is, or passes through, a symlink in the
    upstream at `commit` or one an earlier patch of `patches` makes: writing there (an overlay
    mount, an editing worktree) would land outside the upstream's tree. A section that says the
    path is a link (mode 120000: the link itself deleted or retargeted) may touch the link.
    `patches` is [(name, PatchFile)]."""
    def prefixes(path):
        parts = path.split("/")
        return ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]

    touched = [(name, patch, fp, path) for name, patch in patches for fp in patch.file_patches
               for path in {p for p in (fp.old_path, fp.new_path) if p}]
    # One batched lookup of every prefix: a series is hundreds of paths in a few directories.
    entries = store.entries(commit, sorted({pre for *_, path in touched for pre in prefixes(path)}))
    links = {pre for pre, entry in entries.items() if entry is not None and entry[0] == SYMLINK}
    for name, patch, fp, path in touched:
        for prefix in prefixes(path):
            if prefix not in links or (prefix == path and SYMLINK in (fp.old_mode, fp.new_mode)):
                continue
            what = "is a symlink" if prefix == path else f"goes through the symlink {prefix}"
            where = "in the upstream" if (entries.get(prefix) or ("",))[0] == SYMLINK \
                else "the series makes"
            raise UnsafePathError(
                f"patch {name}: {path} {what} {where}; a patch may only touch regular files "
                "inside its upstream", path=getattr(patch, "source", name), line=fp.line_no)
        # What the series makes a link (or no longer one) for the patches after this one.
        if fp.old_path is not None and fp.old_path != fp.new_path and fp.is_rename:
            links.discard(fp.old_path)
        if fp.new_path is not None:
            (links.add if fp.new_mode == SYMLINK else links.discard)(fp.new_path)
        elif fp.old_path is not None:
            links.discard(fp.old_path)


def aside_name(directory, name: str, data: bytes) -> str:
    """`name`, or `name` with a number when an earlier, different fix of that name is already
    kept in `directory` (deleted/, skipped/, upstreamed/): it must never be overwritten."""
    stem = name[:-len(".patch")] if name.endswith(".patch") else name
    candidate, number = name, 1
    while (directory / candidate).exists() and (directory / candidate).read_bytes() != data:
        number += 1
        candidate = f"{stem}.{number}.patch"
    return candidate


def refuse_creation_collisions(store: UpstreamStore, commit: str, patches) -> None:
    """Refuse a patch that creates a path the upstream at `commit` already fills: a new file
    (or the target of a copy or rename) where the upstream has a file with other content, or a
    directory; or a path under one of the upstream's files. `git apply` refuses all of these;
    applied in memory they would silently replace the upstream's file or fail with an OSError
    half way through a write. A creation whose content is byte for byte the file the upstream
    already has is no collision (the fix is already there). `patches` is [(name, PatchFile)]."""
    creations = [(name, patch, fp) for name, patch in patches for fp in patch.file_patches
                 if fp.new_path and (fp.is_new or (fp.is_copy or fp.is_rename)
                                     and fp.new_path != fp.old_path)]
    if not creations:
        return

    def prefixes(path):
        parts = path.split("/")
        return ["/".join(parts[:depth]) for depth in range(1, len(parts))]

    entries = store.entries(commit, sorted({p for _, _, fp in creations
                                            for p in [fp.new_path, *prefixes(fp.new_path)]}),
                            directories=True)
    for name, patch, fp in creations:
        where = {"path": getattr(patch, "source", name), "line": fp.line_no}
        for prefix in prefixes(fp.new_path):
            entry = entries[prefix]
            if entry is not None and entry[0] != "040000":
                raise InputError(f"patch {name}: creates {fp.new_path}, but {prefix} is a file "
                                 "in the upstream", **where)
        entry = entries[fp.new_path]
        if entry is None:
            continue
        verb = "copies to" if fp.is_copy else "renames to" if fp.is_rename else "creates"
        if entry[0] == "040000":
            raise InputError(f"patch {name}: {verb} {fp.new_path}, which is a directory in the "
                             "upstream", **where)
        existing = store.read_blob(commit, fp.new_path)
        old = None if fp.is_new else store.read_blob(commit, fp.old_path)
        made = apply_file_patch(old, fp)
        if not (made.ok and made.content == existing):
            raise InputError(f"patch {name}: {verb} {fp.new_path}, which the upstream already "
                             "has (with other content)", **where,
                             hint="make the patch modify the existing file instead")
