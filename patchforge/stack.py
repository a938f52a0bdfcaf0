"""A series as the operations handle it: applied on a pin (`series_state`), a new entry written
with its patch file (`add_to_series`), the ledger kept in step (`series_changed`), the paths
no patch may touch (`refuse_symlinked_paths`), an overlays/ that is a link
(`refuse_linked_overlays`: here, not in `overlay`, so that a rebase asks it without loading the
overlays' module), the creations that meet a filled path (`creation_collisions`,
`profile_collisions`) and the files of a wheel that pip installs outside the install root
(`outside_install_root`, asked by every command that takes a path into a fix)."""
from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from patchforge.apply.diffparse import SYMLINK
from patchforge.apply.hunks import apply_file_patch
from patchforge.apply.series import applies_to_profile, apply_series, profile_set
from patchforge.errors import InputError, UnsafePathError, UsageError
from patchforge.fsutil import atomic_write

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore


def series_state(project: Project, store: UpstreamStore, upstream: str, *, upto: int | None = None,
                 commit=None, strict: bool = True, base_of=None):
    """The upstream's touched files with its series (or its first `upto` patches) applied;
    `base_of` (a PatchFile): only those in every one of its profiles' series, its base."""
    commit = commit or project.lock.pin(upstream).commit
    names = project.patch_names(upstream)
    if upto is not None:
        names = names[:upto]
    patches = [(n, project.read_patch(upstream, n)) for n in names]
    configured = list(project.config.profiles)
    if base_of is not None and configured:
        from patchforge.apply.chains import base_state

        # Each patch that counts as its profiles' series hold it (apply.chains).
        return base_state(lambda paths: store.read_blobs(commit, paths), patches, configured,
                          profile_set(base_of, configured), strict=strict)
    return apply_series(lambda paths: store.read_blobs(commit, paths), patches, strict=strict)


def add_to_series(project: Project, upstream: str, file_name: str, data: bytes) -> None:
    """Write a new patch file, then list it (the order means a kill never lists a missing file)."""
    atomic_write(project.patch_path(upstream, file_name), data)
    series = project.read_series(upstream)
    atomic_write(project.series_path(upstream), series.inserted(file_name).to_bytes())


# The commands whose writes end with series_changed (the ledger regenerated from the history).
LEDGER_WRITERS = frozenset({"new", "refresh", "delete", "rename", "move", "import",
                            "import quilt --update",
                            "bring-back", "bring-back --continue"})


def require_readable_history(project: Project) -> None:
    """Before a command changes the series: in a stack that keeps a ledger, the history it is
    regenerated from must read (a malformed line is an InputError naming it), so that the
    command fails before its first write rather than after its last."""
    from patchforge.ledger import ledger_path, read_history

    if ledger_path(project).exists():
        read_history(project)


def series_changed(project: Project, event: dict | None = None) -> None:
    """Keep the generated ledger (series/PATCHES.md) in step after a command changed the series;
    `event` (a fix deleted) goes into its history first."""
    from patchforge.ledger import record_series_event, update_ledger

    if event is not None:
        record_series_event(project, event)
    else:
        update_ledger(project)


def refuse_converted_line_ends(store: UpstreamStore, commit: str, patches, *,
                                then: str) -> None:
    """InputError for the first of `patches` ((file shown, PatchFile)) whose line ends an
    editor converted to CRLF (`PatchFile.converted_line_end`), made on a file `commit` has
    with LF line ends: none of its hunks matches that file, so a rebase or a bring-back
    stopped on it as a "conflict" with no conflict marker in the worktree (the file as the
    target has it, the fix nowhere), and `--continue` set the fix aside as resolved to
    nothing. A patch of files with CRLF line ends of their own can hold CRs rightly and
    goes on. `then` is the command to run again once the file is converted back."""
    for shown, patch in patches:
        line = patch.converted_line_end()
        if line is None:
            continue
        paths = [fp.old_path for fp in patch.file_patches if fp.old_path is not None]
        files = store.read_blobs(commit, paths)
        if not any(data is not None and b"\r" not in data for data in files.values()):
            continue
        raise InputError(
            "the patch file ends its lines in CRLF (an editor saving with CRLF?), so none of "
            "its hunks matches an LF file; nothing was started",
            path=shown, line=line,
            hint=f"convert its line ends back (`sed -i 's/\\r$//' {shlex.quote(shown)}`, or "
                 f"`dos2unix`), then {then}; `patchforge lint` names every such file")


def refuse_symlinked_paths(store: UpstreamStore, commit: str, patches, *,
                           target: str | None = None) -> None:
    """Refuse any patch that touches a path which is, or passes through, a symlink in the
    upstream at `commit` or one an earlier patch of `patches` makes: writing there (an overlay
    mount, an editing worktree) would land outside the upstream's tree. A section that says the
    path is a link (mode 120000: the link itself deleted or retargeted) may touch the link.
    `patches` is [(name, PatchFile)]. `target`: the label of a revision the series is to move
    to (a rebase's), whose links the refusal names with the way on."""
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
            upstream_link = (entries.get(prefix) or ("",))[0] == SYMLINK
            where = ("in the upstream" if target is None else f"in {target}") \
                if upstream_link else "the series makes"
            stem = name.removesuffix(".patch")
            raise UnsafePathError(
                f"patch {name}: {path} {what} {where}; a patch may only touch regular files "
                "inside its upstream", path=getattr(patch, "source", name), line=fp.line_no,
                hint=None if target is None or not upstream_link else
                f"{target} made {prefix} a link (the code may be in the file it points to "
                f"now): `patchforge delete {stem}` takes the fix out of the series (kept under "
                f"deleted/) so that the rebase can go on; make it again after it on the file "
                f"that has the code (`patchforge new {stem} --file PATH`)")
        # What the series makes a link (or no longer one) for the patches after this one.
        if fp.old_path is not None and fp.old_path != fp.new_path and fp.is_rename:
            links.discard(fp.old_path)
        if fp.new_path is not None:
            (links.add if fp.new_mode == SYMLINK else links.discard)(fp.new_path)
        elif fp.old_path is not None:
            links.discard(fp.old_path)


def outside_install_root(store: UpstreamStore, kind: str, commit: str,
                         paths) -> tuple[str, str] | None:
    """(path, where pip installs it) of the first of `paths` (sorted) that pip installs outside
    the install root: a wheel's NAME-VER.data/scripts, headers or data file
    (store/imports.py outside_install_root), which no overlay can reach (it would be mounted
    under site-packages, where nothing reads it). `commit`: the wheel import (or a commit made
    on it) whose top level names the .data directories. None for any other path, and for any
    path of a git or dir upstream.

    The one predicate of `new --file`, `edit --file`, `add`, `refresh`, the imports, `overlays`,
    `status` and `lint`: `new --file` refused such a file while `add` and `refresh` took it,
    and only `overlays` said so, long after."""
    if kind != "wheel" or not any(p.split("/", 1)[0].endswith(".data") and "/" in p
                                  for p in paths):
        return None
    from patchforge.store.imports import outside_install_root as where_pip_puts
    from patchforge.store.imports import wheel_data_directories

    data_dirs = wheel_data_directories(store, commit)
    for path in sorted(paths):
        where = where_pip_puts(path, data_dirs)
        if where is not None:
            return path, where
    return None


# How the refusals and findings of such a file end, and the way on they give.
OUTSIDE_INSTALL_ROOT = "so a fix of it cannot be mounted or copied there"
OUTSIDE_INSTALL_ROOT_HINT = "fix it in the image (a Dockerfile step)"


def outside_install_root_said(name: str, found: tuple[str, str]) -> str:
    """What `status` and `lint` say of patch `name` (a file name) carrying a file pip
    installs outside the install root (`found`, as outside_install_root gives it), with the
    way on."""
    path, where = found
    return (f"changes {path}: {where}, {OUTSIDE_INSTALL_ROOT} (`patchforge overlays` refuses "
            f"the series); `patchforge edit {name.removesuffix('.patch')}`, put {path} back "
            f"(`git checkout -- {path}` in the worktree), then `patchforge refresh` (a fix of "
            f"nothing else: `patchforge delete {name.removesuffix('.patch')}`), and fix it in "
            "the image (a Dockerfile step)")


def refuse_outside_install_root(store: UpstreamStore, kind: str, commit: str, paths, *,
                                hint: str = OUTSIDE_INSTALL_ROOT_HINT) -> None:
    """UsageError for the first of `paths` pip installs outside the install root
    (outside_install_root), before anything is written."""
    found = outside_install_root(store, kind, commit, paths)
    if found is not None:
        raise UsageError(f"{found[0]}: {found[1]}, {OUTSIDE_INSTALL_ROOT}", hint=hint)


# The user's files that live in overlays/ and survive its regeneration (overlay.KEEP_NAMES).
KEPT_IN_OVERLAYS = ("README.md", ".gitignore")


def refuse_linked_overlays(project: Project) -> None:
    """overlays/ is patchforge's own directory: a symlink there (committed in a pull request,
    or made by hand) is refused before anything is built or written. The swap replaced the
    link, and then failed on the link set aside, at every later run ("Cannot call rmtree on a
    symbolic link"); a rebase's write-out failed the same way. So is a file kept across the
    regeneration (KEPT_IN_OVERLAYS) that is a FIFO, a socket, a device or a directory:
    `overlays` waited on a FIFO there for ever, and a rebase's write-out stopped half-way on it
    with Python's list of what it could not copy as its message."""
    import stat

    for path in (project.overlays_dir, project.overlays_dir.parent / ".overlays.old",
                 project.overlays_dir.parent / ".overlays.new"):
        if path.is_symlink():
            raise InputError(f"{path} is a symlink (to {os.readlink(path)}): overlays/ is "
                             "generated by patchforge as a directory of its own",
                             hint=f"remove the link (`rm {path}`), then run the command again")
    for name in KEPT_IN_OVERLAYS:
        path = project.overlays_dir / name
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue  # none there (or no overlays/ yet)
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
            continue  # (a link is refused as a file patchforge did not write)
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device")
        raise InputError(f"{kind}, not a file: overlays/{name} is kept across each "
                         "regeneration of overlays/ as a file of yours, and this one cannot be "
                         "read",
                         path=str(path),
                         hint=f"remove it (`rm -r {path}`) or make it a file, then run the "
                              "command again")


def refuse_linked_aside(directory) -> None:
    """A directory fixes are kept in (deleted/, skipped/, upstreamed/) must be the project's
    own: InputError when it is a symlink or something else than a directory."""
    if os.path.islink(directory):
        raise InputError(f"{directory} is a symlink (to {os.readlink(directory)}): patchforge "
                         "keeps fixes set aside in the project's own directories",
                         hint="replace the link with a directory holding what it holds, then "
                              "run the command again")
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise InputError(f"{directory} is not a directory: patchforge keeps fixes set aside "
                         "there", hint=f"move the file {directory} away, then run the command "
                                       "again")


def aside_name(directory, name: str, data: bytes | None, taken=()) -> str:
    """`name`, or `name` with a number when an earlier, different fix of that name is already
    kept in `directory` (deleted/, skipped/, upstreamed/, a series' own directory): it must
    never be overwritten. A name in `taken` (the names a series lists) is never given, even
    to a file holding `data`; a file of a free name holding exactly `data` is this write's
    own (a run cut off by a kill), reused, never written again beside it. `data` None: only
    a name without a file is free. A `directory` that is a symlink (committed in a pull
    request) or not a directory is refused, naming it: the fix would be kept outside the
    project, where `git status` does not show it, or not at all."""
    refuse_linked_aside(directory)
    stem = name[:-len(".patch")] if name.endswith(".patch") else name
    candidate, number = name, 1
    while candidate in taken or (directory / candidate).exists():
        if candidate not in taken and data is not None and \
                (directory / candidate).read_bytes() == data:
            break
        number += 1
        candidate = f"{stem}.{number}.patch"
    return candidate


def creates_path(fp) -> bool:
    """True when a file patch makes a path: a new file, or the target of a copy or rename."""
    return fp.new_path is not None and (fp.is_new or (fp.is_copy or fp.is_rename)
                                        and fp.new_path != fp.old_path)


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:depth]) for depth in range(1, len(parts))]


def creation_collisions(store: UpstreamStore, commit: str, patches) -> list[tuple]:
    """Every creation of `patches` ([(name, PatchFile)], in series order) that meets a path
    already filled where it lands, as `git apply` of the series would find it: a file the
    upstream at `commit` has with other content (or a directory there), or a path under one of
    its files, unless an earlier patch deleted or renamed that file away; a file an earlier
    patch made (and did not take away), a path under one, or a path under which an earlier
    patch made files. A creation whose content is byte for byte the file the upstream already
    has is no collision (the fix is already there). Returns [(name, patch, file patch,
    message, hint)]; applied in memory these would silently replace a file or fail with an
    OSError half way through a write."""
    creations = [fp for _, patch in patches for fp in patch.file_patches if creates_path(fp)]
    if not creations:
        return []
    entries = store.entries(commit, sorted({p for fp in creations
                                            for p in [fp.new_path, *_prefixes(fp.new_path)]}),
                            directories=True)
    made: dict[str, str] = {}  # path -> the patch that made the file there
    gone: set[str] = set()  # upstream paths an earlier patch deleted or renamed away
    found = []
    for name, patch in patches:
        for fp in patch.file_patches:
            if creates_path(fp):
                problem = _collision(store, commit, entries, made, gone, fp)
                if problem:
                    found.append((name, patch, fp, *problem))
        for fp in patch.file_patches:
            if fp.old_path is not None and (fp.is_delete or fp.is_rename
                                            and fp.old_path != fp.new_path):
                made.pop(fp.old_path, None)
                gone.add(fp.old_path)
            if creates_path(fp):
                made[fp.new_path] = name
    return found


def profile_collisions(project: Project, store: UpstreamStore, commit: str,
                       patches) -> list[tuple]:
    """creation_collisions of the series each profile applies (the whole series when the
    stack has no profiles): two fixes for different profiles may each create the same file."""
    return [found for _, found in collisions_by_profile(project, store, commit, patches)]


def collisions_by_profile(project: Project, store: UpstreamStore, commit: str,
                          patches) -> list[tuple[str | None, tuple]]:
    """profile_collisions, each with the profile whose series it is in (None: the whole
    series, in a stack without profiles)."""
    found: list[tuple[str | None, tuple]] = []
    profiles: list[str | None] = [*project.config.profiles] or [None]
    for profile in profiles:
        selected = [(n, p) for n, p in patches if applies_to_profile(p, profile)]
        found += [(profile, one) for one in creation_collisions(store, commit, selected)]
    return found


def _collision(store, commit, entries, made, gone, fp) -> tuple[str, str | None] | None:
    """(message, hint) when the creation `fp` meets a filled path (creation_collisions)."""
    path = fp.new_path
    verb = "copies to" if fp.is_copy else "renames to" if fp.is_rename else "creates"
    for prefix in _prefixes(path):
        if prefix in made:
            return f"{verb} {path}, but {prefix} is a file {made[prefix]} creates", None
        entry = entries[prefix]
        if entry is not None and entry[0] != "040000" and prefix not in gone:
            return f"{verb} {path}, but {prefix} is a file in the upstream", None
    if path in made:
        return (f"{verb} {path}, which {made[path]} already creates",
                f"make the patch modify the {path} that {made[path]} creates instead")
    under = next((other for other in made if other.startswith(path + "/")), None)
    if under is not None:
        return f"{verb} {path}, but {made[under]} creates {under} under it", None
    entry = entries[path]
    if entry is None or path in gone:
        return None
    if entry[0] == "040000":
        return f"{verb} {path}, which is a directory in the upstream", None
    existing = store.read_blob(commit, path)
    old = None if fp.is_new else store.read_blob(commit, fp.old_path)
    made_here = apply_file_patch(old, fp)
    if made_here.ok and made_here.content == existing:
        return None
    return (f"{verb} {path}, which the upstream already has (with other content)",
            "make the patch modify the existing file instead")


def refuse_creation_collisions(store: UpstreamStore, commit: str, patches) -> None:
    """Refuse, with the patch file and line, the first creation of `patches` that meets a
    filled path (creation_collisions): `git apply` refuses all of these."""
    for name, patch, fp, message, hint in creation_collisions(store, commit, patches):
        raise InputError(f"patch {name}: {message}", path=getattr(patch, "source", name),
                         line=fp.line_no, hint=hint)
