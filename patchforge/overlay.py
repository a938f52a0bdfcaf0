"""Overlays: full upstream files with a profile's patches applied, and the files that pin them.

For each profile, every file the series touches becomes `overlays/[<profile>/]<upstream>/<path>`
and every declared artifact `overlays/artifacts/<path>` (so that `overlays/` alone is what ships);
`overlays/SHA256SUMS` (sha256sum -c --strict compatible), `overlays/manifest.json` (provenance), a
compose override file per profile (read-only mounts) and a Dockerfile per profile (the overlays
baked into the pinned image) describe them. Everything is computed in memory
first, so a patch that fails leaves `overlays/` untouched, and the same inputs give the same bytes.

It also owns what an overlay cannot carry, a series that deletes an upstream file or makes a
symlink: found by series_removals and series_links, refused where a patch comes in
(removals_overlays_refuse for a worktree's change, refuse_series_removals for the imports and a
clean bring-back) and reported by lint and status.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import Any, TYPE_CHECKING

from patchforge.apply.series import applies_to_profile, apply_series, refuse_unknown_profiles
from patchforge.errors import (ApplyError, ConfigError, InputError, PatchforgeError,
                               StoreError, UsageError)
from patchforge.formats.lockfile import dump_json
from patchforge.model.lock import ImagePin
from patchforge.model.record import field, record
from patchforge.model.words import counted
from patchforge.patterns import on_first_use
from patchforge.stack import (KEPT_IN_OVERLAYS, refuse_creation_collisions,
                              refuse_linked_overlays, refuse_symlinked_paths)
from patchforge.fsutil import (atomic_write, exchange, fault_point, fsync_dir, fsync_dirs, parse_json,
                              interrupts_deferred)

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

MANIFEST_VERSION = 1
GENERATED_NAMES = ("SHA256SUMS", "manifest.json")
ARTIFACTS_DIR = "artifacts"  # overlays/artifacts/<path>: copies of the declared artifacts
KEEP_NAMES = set(KEPT_IN_OVERLAYS)  # user files that live in overlays/ and survive regeneration
# The baked form is a build output like the overlay files it copies: everything in it follows
# from the committed SHA256SUMS and manifest.json, so it is checked where it exists and not
# required to be committed.
BUILD_OUTPUT_NAMES = {"Dockerfile"}
# What the last write of overlays/ in this checkout wrote (`sha256  path`, as SHA256SUMS), kept
# under .patchforge/: the committed SHA256SUMS alone cannot tell a file changed by hand from
# one written before a `git pull` brought newer sums.
WRITTEN_RECORD = "overlays-written.sha256"


def sums_line(digest: str, rel: str) -> str:
    """One line of SHA256SUMS as GNU sha256sum itself writes it: a name holding a backslash or
    a newline is escaped (`\\\\`, `\\n`) behind a backslash that begins the line, which is
    how `sha256sum -c` knows to undo it (a newline has no other spelling)."""
    if "\\" not in rel and "\n" not in rel:
        return f"{digest}  {rel}\n"
    return f"\\{digest}  " + rel.replace("\\", "\\\\").replace("\n", "\\n") + "\n"


def parse_sums_line(line: bytes) -> tuple[bytes, bytes] | None:
    """(digest, name) of a SHA256SUMS line as `sha256sum -c` reads it (an escaped name undone),
    or None for a line that is not `<digest>  <name>`."""
    escaped = line.startswith(b"\\")
    digest, sep, rel = line[escaped:].partition(b"  ")
    if not sep:
        return None
    if escaped:
        parts = rel.split(b"\\\\")
        if any(re.search(rb"\\(?!n)", part) for part in parts):
            return None  # an escape sha256sum does not write
        rel = b"\\".join(part.replace(b"\\n", b"\n") for part in parts)
    return digest, rel


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@record(frozen=True)
class OverlayFile:
    profile: str | None
    upstream: str
    path: str  # relative to the upstream root
    rel: str  # relative to overlays/
    content: bytes
    base_sha256: str | None  # None: the series creates this file
    base_commit: str
    base_label: str
    patches: tuple[tuple[str, str], ...]  # (patch name, sha256 of the patch file)
    target: str | None  # container path (install-root + path)
    mode: str = "100644"  # the upstream file's git mode (100755: executable)

    @property
    def sha256(self) -> str:
        return sha256(self.content)


@record
class OverlaySet:
    files: list[OverlayFile] = field(default_factory=list)
    artifacts: list[tuple[str, str]] = field(default_factory=list)  # (path rel. to root, sha256)
    artifact_files: dict[str, bytes] = field(default_factory=dict)  # rel under overlays/ -> bytes
    # The copies (rel under overlays/) of artifacts that are executable in the project: an
    # entrypoint script mounted from its copy must still run in the container.
    artifact_executables: set[str] = field(default_factory=set)
    sources: dict[str, dict] = field(default_factory=dict)  # upstream -> the lock's source entry
    image: ImagePin | None = None  # the lock's image pin, if the stack pins one
    outputs: dict[str, bytes] = field(default_factory=dict)  # rel path under overlays/ -> bytes
    warnings: list[str] = field(default_factory=list)
    # The upstreams with overlay files and no install-root: no compose fragment mounts them and
    # no Dockerfile copies them (a warning says so; `--check` and `verify` fail on it).
    unmounted: list[str] = field(default_factory=list)
    # profile -> (sha256 at the pin or None, target) of each file of the fixes dropped as
    # landed that no overlay of the profile covers, why a kept fix is not among them, and
    # what of them the pin lacks (a fix upstream reverted there): the Dockerfile checks the
    # image holds them (no overlay carries those fixes), and fails for the last.
    landed: dict[str | None, tuple[list[tuple[str | None, str]], list[str], list[str]]] = \
        field(default_factory=dict)

    def by_profile(self, profile) -> list[OverlayFile]:
        return [f for f in self.files if f.profile == profile]


def _profile_names(config) -> list[str | None]:
    return list(config.profiles) or [None]


def shared_targets(project: Project, series: dict) -> list[tuple[str, str, str]]:
    """The paths in the image that overlay files of two upstreams would both go to, in one
    profile: their install roots and paths meet, so compose would mount both files there and
    the Dockerfile copy one over the other, and one upstream's fix would never be deployed.
    `series`: {upstream: [(name, PatchFile)]}. Returns (message, the second upstream, the
    second's patch) for each such path."""
    config = project.config
    out = []
    for profile in _profile_names(config):
        first: dict[str, tuple[str, str, list[str]]] = {}  # target -> (upstream, path, patches)
        for upstream, patches in series.items():
            install_root = config.upstreams[upstream].install_root
            if not install_root:
                continue
            touched: dict[str, list[str]] = {}
            for name, patch in patches:
                if not applies_to_profile(patch, profile):
                    continue
                for fp in patch.file_patches:
                    if fp.new_path is not None:
                        touched.setdefault(fp.new_path, []).append(f"{upstream}/{name}")
            for path, names in touched.items():
                target = str(PurePosixPath(install_root) / path)
                seen = first.setdefault(target, (upstream, path, names))
                if seen[0] != upstream:
                    out.append((f"{seen[0]}/{seen[1]} ({', '.join(seen[2])}) and "
                                f"{upstream}/{path} ({', '.join(names)}) both go to {target} "
                                "in the image" + (f" (profile {profile})" if profile else "")
                                + ": one upstream's overlay would hide the other's",
                                upstream, names[0].split("/", 1)[1]))
    return out


def refuse_outside_install_root(store: UpstreamStore, upstream: str, pin, state) -> None:
    """A wheel's file under NAME-VER.data/scripts, headers or data is installed by pip outside
    site-packages (bin/, include/, the prefix), which the install root cannot name: its overlay
    would be mounted under site-packages, where nothing reads it. Refused, naming the fix and
    where pip puts the file (stack.outside_install_root; purelib and platlib are at the root
    already: store/imports.py)."""
    from patchforge.stack import outside_install_root

    found = outside_install_root(store, pin.kind, pin.commit, state.current)
    if found is not None:
        path, where = found
        by = state.touched_by.get(path, [])
        raise ApplyError(f"{upstream}: {path}" + (f" ({', '.join(by)})" if by else "")
                         + f": {where}, so its overlay would be mounted where nothing reads it",
                         hint="fix it in the image (a Dockerfile step), or drop the patch")


def _refuse_shared_targets(project: Project, series: dict) -> None:
    found = shared_targets(project, series)
    if found:
        message, upstream, _ = found[0]
        raise ConfigError(message, path=str(project.config_path),
                          line=_install_root_line(project, upstream),
                          hint="give each upstream the install-root its files have in the "
                               "image, or keep the change in one upstream's series")


def _install_root_line(project: Project, upstream: str) -> int | None:
    """The configuration's `install-root` line of `upstream`'s table, for the error's line."""
    from patchforge.formats.config import upstream_key_line

    return upstream_key_line(project.config_path, upstream, "install-root")


def _in_profile(exc: ApplyError, label: str | None) -> ApplyError:
    """`exc` with the profiles whose overlays it stops named (an overlay is a profile's)."""
    if label:
        exc.message = f"{exc.message} (profile {label})"
        exc.args = (exc.message,)
    return exc


def _chains(upstream: str, read_base, patches, configured, placement: bool = False):
    """A series with patches for some profiles only, walked on its chains
    (apply.chains.apply_on_chains: each patch made on its base, carried into each profile's
    series by a 3-way merge), None for a series of one chain (each profile's series is then
    applied as it is). A patch that does not apply on its base, or does not go into a profile's
    series, is an ApplyError naming it, the profiles and the patches it meets there."""
    from patchforge.apply.chains import REMEDY, apply_on_chains
    from patchforge.apply.series import profile_bases_differ

    if not profile_bases_differ(patches, configured):
        return None
    chains = apply_on_chains(read_base, patches, configured, strict=True, placement=placement)
    for problem in chains.problems:
        raise ApplyError(f"{upstream}: patch {problem.name} {problem.describe()}",
                         hint=f"`patchforge edit {problem.name.removesuffix('.patch')}` and "
                              f"{REMEDY}; `patchforge lint` lists each such patch")
    return chains


def build_overlays(project: Project, store: UpstreamStore, *, lock=None,
                   patch_sources=None, kept_sources=None, placement: bool = False
                   ) -> OverlaySet:
    """Compute every overlay and metadata file in memory.

    `lock`, `patch_sources` ({upstream: [(name, PatchFile, raw bytes)]}) and `kept_sources`
    (the fixes under upstreamed/: {upstream: [(file name, bytes)]}) let a rebase build the
    overlays of its new state before anything is written. With `placement` (`overlays`,
    which a deployment runs), a patch put where nearness to its header's line chose among
    several places, in a file it was not made on, is a warning naming it and the lines (a
    search of the file per hunk; a rebase stops on such a patch as unsure instead).
    """
    refuse_linked_overlays(project)
    config = project.config
    lock = lock or project.lock
    result = OverlaySet(image=lock.image)
    series: dict[str, list] = {}
    for upstream in project.upstream_names():
        if patch_sources is not None:
            patches = patch_sources.get(upstream, [])
        else:
            project.refuse_lost_series(upstream)
            patches = [(n, project.read_patch(upstream, n), project.read_patch_bytes(upstream, n))
                       for n in project.patch_names(upstream)]
        if not patches:
            continue
        series[upstream] = [(n, p) for n, p, _ in patches]
        pin = lock.pin(upstream)
        result.sources[upstream] = dict(pin.source)
        install_root = config.upstreams[upstream].install_root
        # A mount through an upstream symlink would cover a file outside the upstream's tree.
        refuse_symlinked_paths(store, pin.commit, [(n, p) for n, p, _ in patches])

        def read_base(paths, commit=pin.commit):
            return store.read_blobs(commit, paths)

        for _, patch, _ in patches:
            refuse_unknown_profiles(patch, list(config.profiles))
        chains = _chains(upstream, read_base, [(n, p) for n, p, _ in patches],
                         list(config.profiles), placement)
        for profile in _profile_names(config):
            selected = [(n, p) for n, p, _ in patches if applies_to_profile(p, profile)]
            if not selected:
                continue
            # Per profile: two fixes for different profiles may each create the same file.
            refuse_creation_collisions(store, pin.commit, selected)
            if chains is not None:
                assert profile is not None
                state = chains.profile(profile)
                outcomes = [chains.outcomes[i] for i, (_, p, _) in enumerate(patches)
                            if applies_to_profile(p, profile)]
            else:
                try:
                    state = apply_series(read_base, selected, strict=True,
                                         placement=placement)
                except ApplyError as exc:
                    raise _in_profile(exc, profile) from None
                outcomes = state.outcomes
            for outcome in outcomes:
                if outcome.worst == "fuzz":
                    result.warnings.append(f"{upstream}/{outcome.name}: applies only with fuzz"
                                           + (f" (profile {profile})" if profile else ""))
                for place in outcome.ambiguous:
                    # Nearness to its header's line chose among several places, in a file it
                    # was not made on: the overlay may hold the fix in a twin of its code
                    # (status says unsure, lint a placement error).
                    result.warnings.append(
                        f"{upstream}/{outcome.name}: the place of its change is ambiguous: "
                        f"{place.describe()} (put at line {place.at_line}, the nearest to its "
                        "header's)" + (f" (profile {profile})" if profile else "")
                        + f": `patchforge edit {outcome.name.removesuffix('.patch')}`, move "
                        "the change where it belongs, refresh")
            digests = {n: sha256(raw) for n, _, raw in patches}
            # The mode each file has after the series: the one a patch gives (a new script,
            # a mode change, a renamed executable), else the upstream's.
            entries = store.entries(pin.commit, sorted({state.origins.get(p, p)
                                                        for p in state.current}))

            def base_mode(path, entries=entries):
                return (entries.get(path) or (None,))[0]
            refuse_outside_install_root(store, upstream, pin, state)
            for path in sorted(state.current):
                content = state.current[path]
                if content is None:
                    if state.base.get(path) is not None:
                        # The patch that deletes it (the last one to): the one to change.
                        by = [n for n, p in selected for fp in p.file_patches
                              if fp.old_path == path and fp.new_path is None][-1:]
                        raise ApplyError(
                            f"{upstream}: the series deletes {path}"
                            + (f" ({by[0]})" if by else "")
                            + "; an overlay cannot delete a file in the image",
                            hint="keep the file and empty it, or drop the patch")
                    continue
                if state.mode(path, base_mode) == "120000":
                    raise ApplyError(
                        f"{upstream}: the series makes {path} a symlink; an overlay file is "
                        "mounted or copied as a file, never as a link",
                        hint="make the link in the image, or drop the patch from this profile")
                prefix = f"{profile}/" if profile else ""
                base = state.base.get(path)
                result.files.append(OverlayFile(
                    profile=profile, upstream=upstream, path=path,
                    rel=f"{prefix}{upstream}/{path}", content=content,
                    base_sha256=sha256(base) if base is not None else None,
                    base_commit=pin.commit, base_label=pin.label,
                    patches=tuple((n, digests[n]) for n in state.touched_by.get(path, [])),
                    target=str(PurePosixPath(install_root) / path) if install_root else None,
                    mode="100755" if state.mode(path, base_mode) == "100755" else "100644"))
        if not install_root and any(f.upstream == upstream for f in result.files):
            # The files are written and pinned, but nothing says where they go in the image:
            # without a word, a deployment through compose.yaml or the Dockerfile would run
            # without these fixes.
            result.unmounted.append(upstream)
            result.warnings.append(unmounted_said(upstream))
    if len(series) > 1:
        _refuse_shared_targets(project, series)
    # (A profile or upstream named like a file written beside overlays/<name>/ is refused
    # where the configuration is read: names.RESERVED_DIRECTORY_NAMES.)
    root = project.root.resolve()
    listed: set[str] = set()
    for artifact in config.artifacts:
        parts = PurePosixPath(artifact).parts
        if not parts or PurePosixPath(artifact).is_absolute() or ".." in parts:
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact!r} must be a path inside the project")
        # manifest.json names the copy as the entry is written and SHA256SUMS as the path it
        # is: `./run.sh` (or `d//f`, `d/f/`) had manifest.json list artifacts/./run.sh, which
        # SHA256SUMS does not, and verify failed on what overlays had just written. Twice the
        # same file was listed twice.
        plain = PurePosixPath(*parts).as_posix()
        if plain != artifact:
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact!r} is not written as one plain path",
                                  hint=f"write it {plain!r}")
        if plain in listed:
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact!r} is listed twice",
                                  hint="list each file once")
        listed.add(plain)
        # Copied into overlays/ and so into every deployment and CI artifact: never git's own
        # files (a remote URL may carry a token), patchforge's output or state, nor a file a
        # symlink brings in from outside the project (a key in the home directory).
        if _not_of_the_stack(parts):
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact!r} is not a file of the stack "
                                  "(.git, overlays/ and .patchforge/ cannot be artifacts)")
        source = project.root / artifact
        real = source.resolve()
        if real != root and root not in real.parents:
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact} is a symlink to {real}, outside the "
                                  "project", hint="copy the file into the project")
        # The same rule for where a link inside the project leads (`tables/x -> ../.git/config`,
        # committed by a pull request): the file read is the one it names.
        led_to = real.relative_to(root).parts
        if led_to and _not_of_the_stack(led_to):
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact} is a symlink to {'/'.join(led_to)}, "
                                  "which is not a file of the stack (.git, overlays/ and "
                                  ".patchforge/ cannot be artifacts)",
                                  hint="list a file the stack keeps itself: git's own files "
                                       "can carry a token (a remote URL, a checkout's header)")
        try:
            mode = source.stat().st_mode
        except FileNotFoundError:
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact} does not exist") from None
        if stat.S_ISDIR(mode):
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact} is a directory: an artifact is a file",
                                  hint="name each file of the directory in `artifacts`")
        if not stat.S_ISREG(mode):
            # A FIFO (a socket, a device): reading it waited for a writer for ever.
            raise _artifact_error(project, artifact,
                                  f"artifacts: {artifact} is not a regular file (a FIFO, a "
                                  "socket or a device): an artifact is a file")
        data = source.read_bytes()
        result.artifacts.append((artifact, sha256(data)))
        copy = f"{ARTIFACTS_DIR}/{PurePosixPath(*parts).as_posix()}"
        result.artifact_files[copy] = data
        if os.access(source, os.X_OK):
            result.artifact_executables.add(copy)
    result.files.sort(key=lambda f: f.rel)
    result.landed = _landed_files(project, store, lock, result, kept_sources)
    for profile, (_, _, lacking) in result.landed.items():
        rel_dir = f"{profile}/" if profile else ""
        result.warnings += [f"overlays/{rel_dir}Dockerfile fails its build: {why}"
                            for why in lacking]
    result.outputs = render_metadata(project, result)
    image = result.image
    stray = stack_compose_without_the_service(project) if fragment_image(
        project, image.reference if image else None, image.digest if image else None) else None
    if stray is not None:
        result.warnings.append(f"{stray[0]} {stray[1]}")
    return result


def unmounted_said(upstream: str) -> str:
    """The warning of an upstream with overlay files and no install-root (OverlaySet.unmounted)."""
    return (f"{upstream}: no install-root is configured, so compose.yaml does not mount its "
            f"overlay files and the Dockerfile does not copy them (set "
            f"upstreams.{upstream}.install-root)")


def _landed_files(project: Project, store: UpstreamStore, lock, overlays: OverlaySet, kept
                  ) -> dict[str | None, tuple[list[tuple[str | None, str]], list[str], list[str]]]:
    """OverlaySet.landed: per profile, the files of the fixes dropped as landed that none of
    its overlays covers, with the upstream's sha256 of each at the pin (`verify --installed`'s
    expectation: landings.LandedFixes)."""
    from patchforge.landings import LandedFixes
    from patchforge.layers import normalize

    found = {}
    for profile in fragment_profiles(project, {f.profile for f in overlays.files}):
        covered = {normalize(f.target) for f in overlays.by_profile(profile) if f.target}
        landed = LandedFixes.of(project, profile, covered, kept)
        pinned = landed.pinned_sha256(store, lock) if landed.files else {}
        if landed.files or landed.covered_changes:
            # A fix that cannot be judged (offline, a cache without its files) leaves out the
            # step that fails the build where the pin lacks it: the Dockerfile would claim a
            # fix its image may not hold. Nothing is written then.
            failed = landed.judge_gone(project, store, lock)
            if failed:
                rel_dir = f"{profile}/" if profile else ""
                raise StoreError(
                    f"overlays/{rel_dir}Dockerfile cannot be made: {failed[0]}"
                    + (f" (and {len(failed) - 1} more "
                       f"{'fix' if len(failed) == 2 else 'fixes'} kept as landed)"
                       if len(failed) > 1 else ""),
                    hint=("run the `patchforge status --against` it names (it brings the "
                          "version the fix landed in, which `fetch` does not)"
                          if "` brings it" in failed[0] and "status --against" in failed[0]
                          else "run `patchforge fetch` (it brings the files of the fixes kept "
                          "as landed too)")
                    + (", or the command once without --offline" if project.offline else ""))
        # (Said in the Dockerfile, which must read the same in every clone: no absolute path.)
        unread = [" ".join(why.replace(f"{project.root}/", "").split())
                  for why in landed.unread]
        # A fix upstream took out again at the pin (reverted): the pin's file lacks it, so the
        # image's own file is no proof of it, as `verify --installed` judges it.
        lacking = [f"{target} is the upstream's file at the pin, which {gone.lacks}: "
                   + " ".join(gone.message().split())
                   for target, gone in landed.taken_out()]
        # Such a fix in a file an overlay covers: the overlay is the pin's file with the other
        # fixes, which holds it only where another patch makes it again (its content tells).
        content = {normalize(f.target): f.content for f in overlays.by_profile(profile)
                   if f.target}
        lacking += [overlaid_lacks(target, gone, state)
                    for target, gone, state in landed.overlaid_lacking(content.get)]
        found[profile] = ([(pinned[key], landed.files[key]["target"]) for key in sorted(pinned)],
                          unread, list(dict.fromkeys(lacking)))
    return found


def overlaid_lacks(target: str, gone, state: str) -> str:
    """What is said of an overlay (of `target`) that lacks a fix upstream took out at the pin
    (LandedFixes.overlaid_lacking's), in `overlays`, the Dockerfile and `verify`."""
    said = "lacks the fix" if state == "gone" else "does not show the fix's change"
    return (f"the overlay of {target} is the upstream's file at the pin with the other fixes, "
            f"which {said}: " + " ".join(gone.message().split()))


def removals_overlays_refuse(project: Project, store: UpstreamStore, upstream_commit: str,
                             changes, later=()) -> list[str]:
    """Of the files a resolution or an edit takes away (`changes`, worktree_diff's: (path,
    old, new, ...), new None), those the upstream has at `upstream_commit` and no patch of
    `later` (PatchFiles after it in the series) makes again: the series would delete them,
    and an overlay cannot delete a file in the image, so `overlays` (and a rebase's
    write-out) refuse such a series. Empty in a project that writes no overlays (no
    overlays/ yet), which can carry a deletion as git and quilt do (`removed_upstream_files`
    names them for a warning)."""
    if not project.makes_overlays:
        return []
    return removed_upstream_files(store, upstream_commit, changes, later)


def removed_upstream_files(store: UpstreamStore, upstream_commit: str, changes,
                           later=()) -> list[str]:
    """The files of `changes` taken away that the upstream has at `upstream_commit` and no
    patch of `later` makes again (see removals_overlays_refuse)."""
    removed = [path for path, old, new, *_ in changes if old is not None and new is None]
    return _gone_for_good(store, upstream_commit, removed, later)


def _gone_for_good(store: UpstreamStore, upstream_commit: str, removed: list[str],
                   later) -> list[str]:
    """Of `removed`, the paths the upstream has at `upstream_commit` that no patch of `later`
    makes again (creates, or renames or copies to): the series' end state, which is what an
    overlay holds, lacks them."""
    if not removed:
        return []
    entries = store.entries(upstream_commit, removed)
    made_again = {fp.new_path for patch in later for fp in patch.file_patches
                  if fp.new_path is not None and (fp.is_new or fp.old_path != fp.new_path)}
    return [path for path in removed
            if entries.get(path) is not None and path not in made_again]


def _taken_away(patch) -> list:
    """The file patches of `patch` that take a file away: a deletion, or a rename to another
    path (a copy keeps its source)."""
    return [fp for fp in patch.file_patches
            if fp.old_path is not None and not fp.is_copy and fp.new_path != fp.old_path]


def series_removals(project: Project, store: UpstreamStore, upstream_commit: str,
                    patches) -> list[tuple[str, str, str | None]]:
    """(name, path, renamed to or None) for each upstream file (at `upstream_commit`) that a
    patch of `patches` ([(name, PatchFile)], in series order) takes away and no later patch
    of the same profile's series makes again: the deletions of the series that `overlays`
    refuses (an overlay cannot delete a file in the image). Looked for in every profile's
    series (the whole series in a stack without profiles), each once, in series order.
    Whether the project writes overlays is the caller's question (see
    refuse_series_removals; lint reports these where overlays/ exists)."""
    if not any(_taken_away(patch) for _, patch in patches):
        return []
    found: dict[tuple[str, str], str | None] = {}
    profiles: list[str | None] = [*project.config.profiles] or [None]
    for profile in profiles:
        selected = [p for p in patches if applies_to_profile(p[1], profile)]
        for i, (name, patch) in enumerate(selected):
            away = {fp.old_path: fp.new_path for fp in _taken_away(patch)}
            for path in _gone_for_good(store, upstream_commit, list(away),
                                       [p for _, p in selected[i + 1:]]):
                found.setdefault((name, path), away[path])
    order = {name: i for i, (name, _) in enumerate(patches)}
    return [(name, path, to) for (name, path), to in
            sorted(found.items(), key=lambda item: (order[item[0][0]], item[0][1]))]


def series_links(project: Project, patches) -> list[tuple[str, str]]:
    """(name, path) for each path a patch of `patches` ([(name, PatchFile)], in series order)
    makes a symlink (a new link, or a file turned into one) that no later patch of the same
    profile's series turns back into a file or deletes: what `overlays` refuses besides a
    deletion (an overlay file is mounted or copied as a file, never as a link). Read from the
    diffs alone; whether the project writes overlays is the caller's question."""
    from patchforge.apply.diffparse import SYMLINK

    if not any(fp.new_mode == SYMLINK and fp.old_mode != SYMLINK
               for _, patch in patches for fp in patch.file_patches):
        return []
    found: dict[tuple[str, str], None] = {}
    profiles: list[str | None] = [*project.config.profiles] or [None]
    for profile in profiles:
        made: dict[str, str] = {}  # path -> the patch that made it a link
        for name, patch in patches:
            if not applies_to_profile(patch, profile):
                continue
            for fp in patch.file_patches:
                if fp.old_path is not None and fp.old_path != fp.new_path and not fp.is_copy:
                    made.pop(fp.old_path, None)
                if fp.new_path is None:
                    continue
                if fp.new_mode == SYMLINK and fp.old_mode != SYMLINK:
                    made[fp.new_path] = name
                elif fp.new_mode is not None and fp.new_mode != SYMLINK:
                    made.pop(fp.new_path, None)
        for path, name in made.items():
            found.setdefault((name, path), None)
    order = {name: i for i, (name, _) in enumerate(patches)}
    return sorted(found, key=lambda item: (order[item[0]], item[1]))


LINK_REFUSED = ("an overlay file is mounted or copied as a file, never as a link "
                "(`patchforge overlays` refuses a series that makes one)")


NAME_REFUSED = ("its name is not UTF-8, and compose and a Dockerfile name a file in UTF-8 only "
                "(`patchforge overlays` refuses a series that writes one)")


def shown_name(path: str) -> str:
    """A path for a message: as it is when it is UTF-8, else as git quotes it
    (`"pkg/caf\\351.py"`), never with the surrogate escapes Python reads it with."""
    raw = path.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
        return path
    except UnicodeDecodeError:
        from patchforge.store.diff import quote_c_path

        return quote_c_path(raw).decode("ascii")


def series_unnamed_files(patches) -> list[tuple[str, str]]:
    """(name, path) for each file a patch of `patches` ([(name, PatchFile)]) writes (makes or
    changes) whose name is not UTF-8: `overlays` cannot mount or copy it (`_compose_string`),
    so where the project writes overlays each way in refuses it, as it does a link."""
    return [(name, fp.new_path) for name, patch in patches for fp in patch.file_patches
            if fp.new_path is not None and shown_name(fp.new_path) != fp.new_path]


def followed_to_unnamed(patch, written) -> list[str]:
    """Of the paths a fix writes after a move (`written`), those whose name is not UTF-8 that
    its own diff does not write by that name: upstream renamed the file so and the fix
    followed it. Where the project writes overlays, `rebase --to` refuses such a move
    (move_to_unnamed_said); `status --against` and a dry run say so beforehand."""
    own = {fp.new_path for fp in patch.file_patches}
    return [path for path in written
            if path is not None and path not in own and shown_name(path) != path]


# The way on from a move move_to_unnamed_said refuses.
UNNAMED_MOVE_WAY_OUT = ("stay on this pin, or take the file out of the fix (`patchforge edit`) "
                        "before the move")


def move_to_unnamed_said(fix: str, path: str) -> str:
    """Why a move of `fix` (upstream/name) that writes `path` (followed_to_unnamed) is refused."""
    return (f"{fix} would write {shown_name(path)} after the move, and this project writes "
            "overlays: its name is not UTF-8, which compose and a Dockerfile cannot name")


def new_series_removals(project: Project, store: UpstreamStore, upstream_commit: str,
                        before, after) -> list[tuple[str, str, str | None]]:
    """series_removals of `after` that `before` does not have ([(name, PatchFile)] each, in
    series order), where the project writes overlays (overlays/ exists); none elsewhere."""
    if not project.makes_overlays:
        return []
    had = {(name, path) for name, path, _ in series_removals(project, store, upstream_commit,
                                                              before)}
    return [found for found in series_removals(project, store, upstream_commit, after)
            if found[:2] not in had]


def refuse_series_removals(project: Project, store: UpstreamStore, upstream: str,
                           upstream_commit: str, before, after, *,
                           sources: dict[str, tuple[str, bytes | None]] | None = None,
                           outcome: str = "nothing was imported",
                           way_out: str = "or leave the patch out of the import",
                           listed: dict[str, str] | None = None) -> None:
    """InputError, where the project writes overlays (overlays/ exists), when `after` (the
    series a command would write, [(name, PatchFile)]) deletes an upstream file (or makes a
    symlink, series_links) that `before` (the series as it is) does not: the one check of
    every way a patch enters the series other than a worktree's change (the imports, `import quilt --update`, a clean
    `bring-back`), so that such a patch is refused where it comes in, naming it, instead of
    being written for `overlays` to refuse later, when nothing says where it came from. A
    deletion the series already had is lint's to report, not this command's. `sources`
    names where a patch came from (a quilt patch file, an mbox message, a commit) and, for a
    file, its bytes as read there (for the line of the file's section); a patch without one
    is named by its path in the series. `listed` gives, for a patch, the line of a series
    file that lists it (`DIR/series:3`, quilt's), said beside it. Nothing is written by the
    caller when it raises."""
    for name, path, renamed in new_series_removals(project, store, upstream_commit, before,
                                                   after):
        where, original = (sources or {}).get(
            name, (str(project.patch_path(upstream, name)), None))
        what = f"renames {path} to {renamed}" if renamed else f"deletes {path}"
        at = f" (listed at {listed[name]})" if listed and name in listed else ""
        raise InputError(
            f"patch {name}{at}: {what}, a file of the {upstream} upstream that no later patch "
            "makes again, and this project writes overlays, which cannot delete a file in the "
            f"image (`patchforge overlays` refuses a series that deletes one); {outcome}",
            path=where, line=section_line(original, where, old_path=path),
            hint=f"make the patch keep {path}, changed as the image needs (e.g. emptied), "
                 f"{way_out}")
    if not project.makes_overlays:
        return
    # What else `overlays` cannot mount or copy: (the series' such files, what is said of
    # one, the way out).
    for found, said, hint in (
            (lambda series: series_links(project, series),
             lambda path: f"makes {path} a symlink, and this project writes overlays: "
                          f"{LINK_REFUSED}",
             "make the link in the image (a Dockerfile step)"),
            (series_unnamed_files,
             lambda path: f"writes {shown_name(path)}, and this project writes overlays: "
                          f"{NAME_REFUSED}",
             "give the file a UTF-8 name (in the upstream, or in the patch where the patch "
             "makes it)")):
        brought = found(after)
        had = set(found(before)) if brought else set()
        for name, path in brought:
            if (name, path) in had:
                continue
            where, original = (sources or {}).get(
                name, (str(project.patch_path(upstream, name)), None))
            at = f" (listed at {listed[name]})" if listed and name in listed else ""
            raise InputError(f"patch {name}{at}: {said(path)}; {outcome}", path=where,
                             line=section_line(original, where, new_path=path),
                             hint=f"{hint}, {way_out}")


def section_line(original: bytes | None, source: str, *, new_path: str | None = None,
                 old_path: str | None = None, hunk: int | None = None) -> int | None:
    """The line of the file section of the patch file as it was read (`original`, before an
    import added fields to its header) that makes `new_path` or takes `old_path` away (with
    `hunk`, 0-based, the line of that hunk's `@@` in it), or None when there is no such file
    or section."""
    if original is None:
        return None
    from patchforge.formats.patchfile import parse_patch_file

    try:
        sections = parse_patch_file(original, source).file_patches
    except InputError:
        return None
    found = next((fp for fp in sections
                  if (new_path is not None and fp.new_path == new_path)
                  or (old_path is not None and fp.old_path == old_path)), None)
    if found is None or hunk is None:
        return None if found is None else found.line_no
    return found.hunks[hunk].line_no if hunk < len(found.hunks) else found.line_no


def _not_of_the_stack(parts: tuple[str, ...]) -> bool:
    """Whether a path (its parts, from the project's root) is git's own (a remote URL or
    checkout's extra header may carry a token) or patchforge's output or state: never an
    artifact, which is copied into overlays/ and so into every deployment and CI upload."""
    return any(part.lower().rstrip(". ") == ".git" for part in parts) or \
        parts[0] in ("overlays", ".patchforge")


def _artifact_error(project: Project, artifact: str, message: str, *,
                    hint: str | None = None) -> ConfigError:
    """The error of a bad `artifacts` entry, naming the configuration and its line (looked up
    only then: a valid stack never reads its configuration again for it)."""
    return ConfigError(message, hint=hint, path=str(project.config_path),
                       line=_artifact_line(project, artifact))


def _artifact_line(project: Project, artifact: str) -> int | None:
    """The configuration's line naming `artifact` (for the error's file:line)."""
    try:
        lines = Path(project.config_path).read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    quoted = (f'"{artifact}"', f"'{artifact}'")
    return next((n for n, line in enumerate(lines, 1) if any(q in line for q in quoted)), None)


def render_metadata(project: Project, overlays: OverlaySet) -> dict[str, bytes]:
    """SHA256SUMS, manifest.json, the compose override files and Dockerfiles, as bytes keyed by
    path under overlays/."""
    sums = sorted(_digests(overlays).items())
    outputs = {"SHA256SUMS": "".join(sums_line(d, r) for r, d in sums)
               .encode("utf-8", "surrogateescape")}
    manifest: dict[str, Any] = {
        "version": MANIFEST_VERSION,
        "generator": "patchforge",
        "upstreams": {},
        "overlays": [],
        "artifacts": [{"path": a, "sha256": d, "file": f"{ARTIFACTS_DIR}/{a}",
                       # Only when set, as for overlays: other manifests stay as they were.
                       **({"executable": True} if f"{ARTIFACTS_DIR}/{a}" in
                          overlays.artifact_executables else {})}
                      for a, d in overlays.artifacts],
    }
    if overlays.image is not None and overlays.image.digest:
        manifest["image"] = {"reference": overlays.image.reference,
                             "digest": overlays.image.digest}
    for f in overlays.files:
        entry = manifest["upstreams"].setdefault(f.upstream, {"commit": f.base_commit,
                                                              "label": f.base_label})
        if overlays.sources.get(f.upstream):
            entry["source"] = overlays.sources[f.upstream]
        manifest["overlays"].append({
            "profile": f.profile, "upstream": f.upstream, "path": f.path, "file": f.rel,
            "base_commit": f.base_commit, "base_sha256": f.base_sha256, "sha256": f.sha256,
            "target": f.target,
            # Only when set: the manifests of stacks without executables stay as they were.
            **({"executable": True} if f.mode == "100755" else {}),
            "patches": [{"name": n, "sha256": d} for n, d in f.patches],
        })
    outputs["manifest.json"] = dump_json(manifest)
    if not sums:
        # Nothing to list (no fix yet, or every one landed, and no artifact): `sha256sum -c
        # --strict`, the check a deployment runs, fails a list with no line ("no properly
        # formatted checksum lines found"), so the manifest, always there, is the line.
        outputs["SHA256SUMS"] = sums_line(sha256(outputs["manifest.json"]),
                                          "manifest.json").encode("utf-8")
    pinned = fragment_image(project, overlays.image.reference if overlays.image else None,
                            overlays.image.digest if overlays.image else None)
    for profile in fragment_profiles(project, {f.profile for f in overlays.files}):
        files = [f for f in overlays.by_profile(profile) if f.target]
        rel_dir = f"{profile}/" if profile else ""
        outputs[f"{rel_dir}compose.yaml"] = render_compose(project.config.compose_service,
                                                           profile, mounts_of(files),
                                                           _overlays_rel(project), pinned,
                                                           artifact_mounts(manifest))
        outputs[f"{rel_dir}Dockerfile"] = render_dockerfile(
            profile, files, overlays.image, overlays.landed.get(profile, ([], [], [])))
    return outputs


def fragment_profiles(project: Project, with_files: set[str | None]) -> list[str | None]:
    """The profiles that get a compose fragment and a Dockerfile: every configured one (or the
    one deployment of a project without profiles), files or not, and any other that has
    files. A fragment that went away when a profile's last fix landed broke the
    `docker compose -f ... -f overlays/<profile>/compose.yaml` the deployment runs."""
    return sorted({*_profile_names(project.config), *with_files}, key=lambda p: p or "")


def fragment_image(project: Project, reference: str | None, digest: str | None) -> str | None:
    """The image the compose fragment sets for the service: the pinned one by digest, unless
    the configuration says the deployment runs an image of its own (`compose-image = false`)
    or nothing is pinned by digest."""
    if not project.config.compose_image or not reference or not digest:
        return None
    return pinned_image_name(reference, digest)


def pinned_image_name(reference: str, digest: str) -> str:
    """`registry/repository@digest` of a pinned image, as compose and `FROM` take it."""
    from patchforge.net.registry import DOCKER_HUB, parse_image_ref

    ref = parse_image_ref(reference)
    registry = "docker.io" if ref.registry == DOCKER_HUB else ref.registry
    return f"{registry}/{ref.repository}@{digest}"


def _overlays_rel(project: Project) -> str:
    """overlays/ relative to the project's root, as the compose fragment names its sources."""
    return PurePosixPath(*Path(os.path.relpath(project.overlays_dir,
                                               project.root)).parts).as_posix()


@record
class Mount:
    """What the compose fragment needs of one overlay file: where it is under overlays/,
    where it goes in the container, its content digest and git mode. Made from the overlay
    files when they are written, and from manifest.json when `verify` checks the fragment."""
    rel: str
    target: str | None
    sha256: str
    mode: str


def artifact_mounts(manifest: dict) -> list[Mount]:
    """The artifacts' copies manifest.json lists, as the fragment's label covers them."""
    return [Mount(a["file"], None, str(a.get("sha256")),
                  "100755" if a.get("executable") else "100644")
            for a in manifest.get("artifacts") or () if isinstance(a, dict) and a.get("file")]


def mounts_of(files: list[OverlayFile]) -> list[Mount]:
    return [Mount(f.rel, f.target, f.sha256, f.mode) for f in files]


def render_compose(service: str, profile: str | None, files: list[Mount],
                   overlays_rel: str, image: str | None = None,
                   artifacts: list[Mount] | None = None) -> bytes:
    """The compose override file: read-only bind mounts of `files` into `service`, and the
    service's `image` (the pinned image by digest, where upstream.lock pins one). Its label
    covers `artifacts` (their copies under overlays/, which compose.yaml mounts) too.

    Compose resolves every relative path of every `-f` file against the project directory,
    the directory of the first file (compose.yaml, beside overlays/), so sources are written
    from there. It is an override file, not an `include:` target: compose refuses to let an
    included file add to a service the including file defines.
    """
    rel_dir = f"{profile}/" if profile else ""
    fragment = f"{overlays_rel}/{rel_dir}compose.yaml"
    lines = ["# Generated by patchforge: read-only overlay mounts"
             + (f" for profile {profile}" if profile else "") + ".",
             "# An override file for the compose.yaml beside overlays/ (paths are relative to it):",
             f"#   docker compose -f compose.yaml -f {fragment} up -d",
             f"# or, in .env: COMPOSE_FILE=compose.yaml:{fragment}",
             "services:", f"  {_compose_key(service)}:"]
    if image is not None:
        # The overlays are whole files made for this image's files: mounted on another (the
        # image compose.yaml named before a move of the pin), a fix the move dropped as landed
        # upstream was missing with every check green, and other files reverted.
        lines += ["    # The image upstream.lock pins, the one these overlays were made for.",
                  f"    image: {_compose_string(image)}"]
    # A bind mount of a file holds the inode the container started with, and overlays/ is
    # swapped in as a new tree: without a value that changes with the overlays, the fragment
    # stayed byte-identical, compose's config hash with it, and `up -d` left the container
    # running the old fix.
    lines += ["    labels:",
              f"      {OVERLAYS_LABEL}: \"sha256:{mounts_digest(files, artifacts)}\"",
              "    volumes:"]
    for f in files:
        if f.target is None:  # no install root: nothing to mount it at
            continue
        lines += ["      - type: bind",
                  f"        source: {_compose_string('./' + overlays_rel + '/' + f.rel)}",
                  f"        target: {_compose_string(f.target)}", "        read_only: true"]
    if not files:
        lines[-1] = "    volumes: []"
    return ("\n".join(lines) + "\n").encode("utf-8")


OVERLAYS_LABEL = "patchforge.overlays"


def mounts_digest(files: list[Mount], artifacts: list[Mount] | None = None) -> str:
    """sha256 over what a profile's compose fragment mounts: each file's target, content digest
    and mode, one line each, sorted; then each artifact's copy (what compose.yaml mounts from
    overlays/, swapped in as a new tree with the overlays). The fragment's label carries it,
    so a changed overlay or artifact changes the service's configuration and `docker compose
    up -d` recreates the container."""
    lines = sorted(f"{f.sha256} {f.mode} {f.target}\n" for f in files if f.target is not None)
    # (Only where there are artifacts: the label of a stack without any stays as it was.)
    lines += sorted(f"{a.sha256} {a.mode} artifact {a.rel}\n" for a in artifacts or ())
    return sha256("".join(lines).encode("utf-8", "surrogateescape"))


# A service name (letters, digits, `.`, `_`, `-`: the configuration's schema) that YAML reads
# as a string when written plain: led by a letter, and none of the words YAML 1.1 or 1.2 reads
# as a boolean, null or float. Any other (`123`, `1.0`, `true`, `0x1F`) is quoted: compose
# dropped a service whose key it read as a number or boolean ("non-string key"), exit 0,
# with every mount of the fragment.
_PLAIN_KEY = re.compile(r"[A-Za-z][A-Za-z0-9._-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}


def _compose_key(service: str) -> str:
    """`service` as the fragment's key under `services:`, read back by compose as that name."""
    if _PLAIN_KEY.fullmatch(service) and service.lower() not in _YAML_WORDS:
        return service
    return _compose_string(service)


def _compose_string(text: str) -> str:
    """`text` as a YAML double-quoted scalar that compose reads back as exactly `text`.

    Compose interpolates `$VAR` and `${VAR}` in every value, so a `$` is doubled (a file
    `a$b.py` was mounted from and to `a.py`). Characters outside YAML's printable set are
    escaped (and the line and paragraph separators, line breaks to YAML 1.1), and a character
    beyond U+FFFF is written as itself: JSON's surrogate pair
    (`\\ud83d\\ude00`) is an error to a YAML parser, and compose refused the whole file. A name
    that is not UTF-8 has no spelling in YAML at all.
    """
    out = []
    for char in text:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise InputError(f"cannot mount {shown_name(text)} with compose: the name is not "
                             "UTF-8",
                             hint="rename the file in the upstream, or drop the patch")
        if char in '"\\':
            out.append("\\" + char)
        elif char == "$":
            out.append("$$")
        elif 0x20 <= code <= 0x7E or code > 0xFFFF or \
                (0xA0 <= code <= 0xFFFD and code not in (0xFEFF, 0x2028, 0x2029)):
            out.append(char)
        else:
            out.append(f"\\u{code:04x}")
    return '"' + "".join(out) + '"'


def render_dockerfile(profile: str | None, files: list[OverlayFile], image,
                      landed: tuple[list[tuple[str | None, str]], list[str], list[str]] = ([], [], [])
                      ) -> bytes:
    """The baked form: the pinned image with `files` copied in, checked at build time.

    The build context is overlays/ itself. Before copying, the build refuses an image whose
    files are not the pre-images the overlays were made for, or not the upstream's at the pin
    where fixes dropped as landed changed them (`landed`: OverlaySet.landed's of the profile;
    no overlay carries those fixes, so the image must; a fix upstream reverted at the pin
    fails the build, saying so: the pin's file lacks it); after, it checks the context against
    SHA256SUMS and the installed files against their recorded hashes.
    """
    rel_dir = f"{profile}/" if profile else ""
    lines = ["# Generated by patchforge: the overlays" + (f" of profile {profile}" if profile else "")
             + " baked into the pinned image.",
             "# Build with overlays/ as the context (it is what ships):",
             f"#   docker build -f overlays/{rel_dir}Dockerfile -t IMAGE:TAG overlays"]
    if image is not None and image.digest:
        lines.append(f"FROM {pinned_image_name(image.reference, image.digest)}")
    elif image is not None:
        # Pinned offline: the tag alone names whatever the registry holds under it at build
        # time, so the build is still given the digest, never the tag as a default.
        lines += [f"# upstream.lock pins the image {image.reference} by its tag alone (no digest "
                  "was looked up):",
                  "# name it by digest (`--build-arg BASE_IMAGE=repo@sha256:...`), or pin its "
                  "digest online:",
                  f"#   patchforge rebase --to UPSTREAM={image.reference}",
                  "ARG BASE_IMAGE", "FROM ${BASE_IMAGE}"]
    else:
        lines += ["# upstream.lock pins no image: name it by digest (`--build-arg BASE_IMAGE=",
                  "# repo@sha256:...`), or pin one with `patchforge rebase --to repo:tag`.",
                  "ARG BASE_IMAGE", "FROM ${BASE_IMAGE}"]
    landed_files, unread, lacking = landed
    lines += [f"# NOT CHECKED: {why}" for why in unread]
    # A file of a fix upstream reverted at the pin: the pin's own file lacks the fix, and
    # nothing overlays it, so no image of the pin holds it. The build fails, saying so.
    lines += [f"# FAILS: {why}" for why in lacking]
    pre = [f"{f.base_sha256}  {f.target}" for f in files if f.base_sha256] + \
        [f"{digest}  {target}" for digest, target in landed_files if digest]
    absent = [f.target for f in files if f.base_sha256 is None and f.target] + \
        [target for digest, target in landed_files if digest is None]
    checks = [f"{{ printf '%s\\n' {_sh('patchforge: ' + why)} >&2; false; }}"
              for why in lacking]
    if pre:
        checks += SHA256SUM_OPTIONS
        checks.append("printf '%s\\n' \\\n" + "".join(f"      {_sh(line)} \\\n" for line in pre)
                      + "    | sha256sum $c -")
    checks += [f"test ! -e {_sh(target)}" for target in absent]
    if checks:
        lines.append("# The image must hold the files these overlays were made for"
                     + (", and the upstream's own where fixes dropped as landed changed them "
                        "(no overlay carries those)." if landed_files else "."))
        if pre:
            lines.append(SHA256SUM_SAID)
        lines.append("RUN " + " \\\n && ".join(checks))
    if not files:
        return ("\n".join(lines) + "\n").encode("utf-8")
    for f in files:
        if f.target is None:  # no install root: nothing to copy it to
            continue
        mode = "0755" if f.mode == "100755" else "0644"
        lines.append(f"COPY --chmod={mode} "
                     f"{json.dumps([_copy_word(_copy_source(f.rel)), _copy_word(f.target)])}")
    installed = "".join(f"      {_sh(f'{f.sha256}  {f.target}')} \\\n" for f in files)
    lines += ["# The context is what SHA256SUMS pins, and the image now holds exactly the overlays.",
              SHA256SUM_SAID,
              "RUN --mount=type=bind,target=/run/patchforge-overlays \\",
              f"    {SHA256SUM_OPTIONS[0]} \\",
              f" && {SHA256SUM_OPTIONS[1]} \\",
              " && cd /run/patchforge-overlays && sha256sum $c SHA256SUMS \\",
              " && printf '%s\\n' \\\n" + installed + "    | sha256sum $c -"]
    return ("\n".join(lines) + "\n").encode("utf-8")


# The two shell steps setting `$c`, the options of the Dockerfile's `sha256sum` checks: GNU's
# (coreutils: Debian and Ubuntu images, their slim ones too) `-c --strict --quiet`, a malformed
# line failing the check too; BusyBox's (Alpine, busybox images) refuses `--strict`
# ("unrecognized option"), which stopped the build on a base image holding the very files, so
# there `-c` alone, which fails a malformed line by itself. Asked of the sha256sum at hand
# with a line every one must accept (the empty file's digest).
SHA256SUM_SAID = "# ($c: sha256sum's options, --strict --quiet where it takes them; BusyBox's: -c)"
SHA256SUM_OPTIONS = ["c='-c --strict --quiet'",
                     "{ printf '%s  /dev/null\\n' "
                     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 "
                     "| sha256sum $c - >/dev/null 2>&1 || c=-c; }"]


def _copy_word(text: str) -> str:
    """`text` escaped for BuildKit's shell lexer, which every COPY word goes through, the JSON
    form's too (`frontend/dockerfile/shell/lex.go`): `\\X` is X outside quotes, so `$` (a
    variable of the image or the build: `a$b.py` was copied from and to `a.py`), quotes and
    the backslash itself are each written after one."""
    return re.sub(r"""([\\$'"])""", r"\\\1", text)


def _copy_source(rel: str) -> str:
    """`rel` as a COPY source that names that one file. BuildKit takes a source with `*`, `?`
    or `[` in a component as a wildcard (`fsutil/copy`, `ResolveWildcards`): the components
    before the first such one literally, that one and the rest with Go's `filepath.Match`, and
    a pattern that matches nothing copies nothing, without an error. So from the first such
    component on, each of the three is written as a class holding only it (`[[]`); an escape
    (`\\[`) would hide the wildcard, and the name would be looked up with the backslash in it."""
    parts = rel.split("/")
    first = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    parts[first:] = [re.sub(r"([*?\[])", r"[\1]", part) for part in parts[first:]]
    return "/".join(parts)


def _sh(text: str) -> str:
    """One single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def planned_tree(overlays: OverlaySet) -> dict[str, bytes]:
    tree = {f.rel: f.content for f in overlays.files}
    tree.update(overlays.artifact_files)
    tree.update(overlays.outputs)
    return tree


@record(frozen=True)
class Drift:
    path: str
    kind: str  # "changed" | "missing" | "extra"
    detail: str = ""


def check_overlays(project: Project, overlays: OverlaySet) -> list[Drift]:
    """What differs between the regenerated set and what is on disk (committed).

    Metadata files are compared byte for byte; overlay files where they exist on disk (they are
    build outputs, usually git-ignored) and otherwise through the committed SHA256SUMS; a
    Dockerfile (a build output too) where it exists.
    """
    root = project.overlays_dir
    drifts: list[Drift] = []
    for rel, data in sorted(overlays.outputs.items()):
        on_disk, unfit = overlay_file_bytes(root, rel)
        if unfit is not None:
            drifts.append(Drift(rel, "changed", unfit))
        elif on_disk is None:
            if PurePosixPath(rel).name not in BUILD_OUTPUT_NAMES:
                drifts.append(Drift(rel, "missing", "not generated yet"))
        elif on_disk != data:
            drifts.append(Drift(rel, "changed", _first_difference(on_disk, data)))
    for f in overlays.files:
        path = root / f.rel
        on_disk, unfit = overlay_file_bytes(root, f.rel)
        if unfit is not None:
            drifts.append(Drift(f.rel, "changed", unfit))
        elif on_disk is not None and sha256(on_disk) != f.sha256:
            drifts.append(Drift(f.rel, "changed", "overlay file differs from the regenerated one"))
        elif on_disk is not None and os.access(path, os.X_OK) != (f.mode == "100755"):
            drifts.append(Drift(f.rel, "changed", "overlay file should be "
                                + ("executable" if f.mode == "100755" else "not executable")))
    for rel, data in sorted(overlays.artifact_files.items()):
        copy = root / rel
        on_disk, unfit = overlay_file_bytes(root, rel)
        if unfit is not None:
            drifts.append(Drift(rel, "changed", unfit))
        elif on_disk is None:
            continue
        elif on_disk != data:
            drifts.append(Drift(rel, "changed", "the copy differs from the artifact"))
        elif os.access(copy, os.X_OK) != (rel in overlays.artifact_executables):
            drifts.append(Drift(rel, "changed", "the copy should be " + (
                "executable, as the artifact is" if rel in overlays.artifact_executables
                else "not executable, as the artifact is not")))
    known = set(planned_tree(overlays))
    foreign = set(not_patchforges(project, overlays))
    for generated in sorted(_generated_files(root)):
        if generated in foreign:
            drifts.append(Drift(generated, "extra", "not written by patchforge: `patchforge "
                                                    "overlays` refuses to delete it"))
        elif generated not in known:
            drifts.append(Drift(generated, "extra", "no longer generated"))
    return drifts


def fixes_gone_from_files(project: Project, overlays: OverlaySet) -> list[str]:
    """Each fix still in its series that the committed manifest says changes a file, which the
    regenerated overlays no longer have it change: "fix-a.patch no longer changes up/a.py".
    A patch file whose diff was lost (a merge of the stack resolved keeping only its header)
    regenerates as a drift like any other; regenerated and committed, the fix was gone from
    every overlay with every check green. Said so that a person sees which fix it is. A
    deleted fix, or a manifest that cannot be read, says nothing here."""
    try:
        committed = parse_json((project.overlays_dir / "manifest.json").read_bytes())
        entries = [(e["upstream"], e["path"], e.get("profile"), [p["name"] for p in e["patches"]])
                   for e in committed["overlays"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    # By file, over every profile: a stack that gains (or loses) profiles has its overlays
    # under other profiles' names, and its fixes change the same files.
    now: dict[tuple[str, str], set[str]] = {}
    for f in overlays.files:
        now.setdefault((f.upstream, f.path), set()).update(name for name, _ in f.patches)
    listed: dict[str, set[str]] = {}
    gone: dict[tuple[str, str, str], None] = {}
    for upstream, path, _profile, names in entries:
        if upstream not in listed:
            try:
                listed[upstream] = set(project.patch_names(upstream))
            except PatchforgeError:
                listed[upstream] = set()
        for name in names:
            if name in listed[upstream] and name not in now.get((upstream, path), ()):
                gone[(name, upstream, path)] = None
    return [f"{name} no longer changes {upstream}/{path}, which the committed manifest says it "
            "changes: if that is not an edit of yours, its diff was lost (`git diff series/`)"
            for name, upstream, path in gone]


def _first_difference(old: bytes, new: bytes) -> str:
    old_lines, new_lines = old.split(b"\n"), new.split(b"\n")
    for number, (a, b) in enumerate(zip(old_lines, new_lines), 1):
        if a != b:
            return (f"line {number}: committed {a.decode('utf-8', 'replace')[:80]!r}, "
                    f"regenerated {b.decode('utf-8', 'replace')[:80]!r}")
    return f"committed has {counted(len(old_lines), 'line')}, regenerated {len(new_lines)}"


def _generated_files(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    out = []
    for directory, dirs, names in os.walk(root):
        # (A link to a directory is listed with the directories, and never walked into.)
        for name in names + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            rel = Path(directory, name).relative_to(root).as_posix()
            if rel in KEEP_NAMES or name.startswith(".overlays"):
                continue
            out.append(rel)
    return out


def write_overlays(project: Project, overlays: OverlaySet, *,
                   profiles: list[str] | None = None, check_hand_edits: bool = True) -> None:
    """Replace overlays/ with the new set in one step; refused, nothing written, when an
    overlay file there was edited by hand (`refuse_changed_by_hand`; a rebase's write-out
    checks that before it begins, `check_hand_edits=False`), and the files written are
    recorded (WRITTEN_RECORD).

    The new tree is built beside the old one and swapped in with two renames; `recover_overlays`
    finishes a swap that a kill interrupted. With `profiles`, the other profiles' overlay files
    must be what the series generates already (metadata always covers everything).
    """
    root = project.overlays_dir
    refuse_linked_overlays(project)
    if profiles is not None:
        refuse_stale_profiles(project, overlays, profiles)
    if check_hand_edits:
        refuse_changed_by_hand(project, overlays)
    recover_overlays(project)
    staging = root.parent / ".overlays.new"
    old = root.parent / ".overlays.old"
    _remove(staging)
    moved_aside = exchanged = recorded = False
    try:
        staging.mkdir()
        _write_staging(staging, overlays, root)
        # A Ctrl-C between the two renames left no overlays/ at all (the committed SHA256SUMS,
        # manifest and compose file gone from the checkout, `verify` refusing) while the message
        # said nothing was half-written: the swap and the record of what it wrote finish first.
        with interrupts_deferred():
            if root.exists():
                fault_point("rename")
                # One step where the system can: a kill -9 between two renames left no
                # overlays/ at all (a read-only command, `refresh` and `rm` then took the project
                # for one that makes no overlays) until the next `overlays` or rebase.
                exchanged = exchange(staging, root)  # the staging path then holds the old set
                if not exchanged:
                    os.replace(root, old)
                    moved_aside = True
            if not exchanged:
                fault_point("rename")
                os.replace(staging, root)
            fsync_dir(root.parent)
            if not exchanged:
                _remove(old)
            atomic_write(project.state_dir / WRITTEN_RECORD,
                         "".join(sums_line(digest, rel) for rel, digest
                                 in _digests(overlays).items())
                         .encode("utf-8", "surrogateescape"))
            recorded = True
            _remove(staging)  # the old set, after an exchange
    except BaseException:
        # A Ctrl-C, SIGTERM or failed write (a full disk) while the new set was written left
        # its part-written tree beside overlays/ (`.overlays.new/`, files a project without
        # init's ignore lines took into `git add -A`), and a failed second rename left no
        # overlays/: the old set stays, and nothing of the new one (after an exchange, a
        # failed write of the record of what was written swaps the old set back too).
        with interrupts_deferred():
            if exchanged and not recorded and staging.is_dir() and exchange(staging, root):
                fsync_dir(root.parent)
            if moved_aside and not root.exists() and old.is_dir():
                os.replace(old, root)
                fsync_dir(root.parent)
            _remove(staging)
        raise


def _write_staging(staging: Path, overlays: OverlaySet, root: Path) -> None:
    """The new tree of `overlays` written (durably) into `staging`, beside overlays/ (`root`,
    whose KEEP_NAMES files are carried over)."""
    tree = planned_tree(overlays)
    for name in KEEP_NAMES:
        if (root / name).exists():
            tree[name] = (root / name).read_bytes()
    executable = {f.rel for f in overlays.files if f.mode == "100755"} | \
        overlays.artifact_executables
    for rel, data in sorted(tree.items()):
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            fault_point("write")
            handle.write(data)
            handle.flush()
            fault_point("fsync")
            os.fsync(handle.fileno())
        # The file's mode is the one it has in the upstream with the series, or the artifact's
        # in the project (an executable stays executable in the container), whatever the
        # umask says.
        os.chmod(target, 0o755 if rel in executable else 0o644)
    # Every directory of the new tree, deepest first: the files' names are durable before the
    # swap makes the tree the overlays (and the old one is removed).
    fsync_dirs(reversed([directory for directory, _, _ in os.walk(staging)]))


def _fragment_rows(project: Project, manifest: dict,
                   shipped) -> list[tuple[str, str, str]]:
    """Each profile's compose fragment against the one manifest.json's overlays make: neither
    SHA256SUMS nor the manifest lists the fragment, and one that a bad merge, a stale copy or
    a hand edit left mounting fewer files passed `verify` while the container ran without
    those fixes."""
    rows = []
    image = manifest.get("image") or {}
    pinned = fragment_image(project, image.get("reference"), image.get("digest"))
    for profile in fragment_profiles(project, {e["profile"] for e in manifest["overlays"]}):
        rel_text = f"{profile}/compose.yaml" if profile else "compose.yaml"
        if not shipped(rel_text):
            continue
        mounts = [Mount(e["file"], e["target"], e["sha256"],
                        "100755" if e.get("executable") else "100644")
                  for e in manifest["overlays"] if e["profile"] == profile and e.get("target")]
        expected = render_compose(project.config.compose_service, profile, mounts,
                                  _overlays_rel(project), pinned, artifact_mounts(manifest))
        path = project.overlays_dir / rel_text
        unmounted = _unmounted(project, manifest, profile)
        if not path.is_file():
            rows.append((rel_text, "missing", "file not found (it mounts the overlays)"))
        elif path.read_bytes() != expected:
            rows.append((rel_text, "mismatch", _fragment_difference(
                path.read_bytes(), expected, project.config.compose_service)))
        elif not unmounted:
            rows.append((rel_text, "ok", ""))
        rows += [(rel_text, "mismatch", said) for said in unmounted]
    stray = stack_compose_without_the_service(project) if pinned else None
    if stray is not None:
        rows.append((stray[0], "mismatch", stray[1]))
    return rows


def _unmounted(project: Project, manifest: dict, profile: str | None) -> list[str]:
    """What a profile's fragment (and Dockerfile) leaves out: each upstream whose overlay files
    the manifest gives no target (made without an `install-root`), said with its count and the
    setting. The fragment matched the manifest, mounting none of them, and `verify` passed
    while a deployment through it ran without those fixes."""
    from patchforge.formats.config import table_prefix, toml_key

    counts: dict[str, int] = {}
    for entry in manifest["overlays"]:
        if entry["profile"] == profile and not entry.get("target"):
            counts[entry["upstream"]] = counts.get(entry["upstream"], 0) + 1
    out = []
    for upstream, count in sorted(counts.items()):
        files = "overlay file" if count == 1 else "overlay files"
        configured = project.config.upstreams.get(upstream)
        if configured is not None and configured.install_root:
            why = ("the overlays were made without an install-root for it, which the "
                   "configuration now gives: run `patchforge overlays`")
        else:
            why = (f"no install-root is configured for it: add `install-root = \"DIR\"` (where "
                   f"the image installs it, e.g. its site-packages) to the "
                   f"[{table_prefix(project.config_path)}upstreams.{toml_key(upstream)}] table "
                   f"of {Path(project.config_path).name} and run `patchforge overlays`")
        out.append(f"mounts none of {upstream}'s {count} {files}, and the Dockerfile copies "
                   f"none, so no deployment through them has its fixes: {why}")
    return out


# The names compose looks for in the project directory, in its order.
_COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")


def stack_compose_without_the_service(project: Project) -> tuple[str, str] | None:
    """The stack's own compose file (beside overlays/, the one the fragments override) when it
    defines services but not `compose-service`: (its path, what that means). Asked only where
    the fragments set the pinned image: the fragment's service is then one of its own, which
    compose starts beside the user's, and that runs without a single overlay while every check
    was green (without an image compose refuses the pair, loudly). None when there is no such
    file or its services cannot be read here (flow style, `include:`)."""
    for name in _COMPOSE_FILES:
        path = project.root / name
        if path.is_file():
            break
    else:
        return None
    services = _compose_service_names(path.read_bytes())
    service = project.config.compose_service
    if not services or service in services:
        return None
    # Of several services, which one runs the upstream is the user's to say (a proxy or a
    # database beside it would get the fixes mounted, and the server still run without them).
    if len(services) == 1:
        runs, setting = f"{services[0]!r} runs", f'`compose-service = "{services[0]}"`'
    else:
        runs, setting = ("the one that runs the upstream runs",
                         "`compose-service` to the one of them that runs the upstream "
                         '(`compose-service = "NAME"`)')
    # Where the setting goes: the table of pyproject.toml, or patchforge.toml's top level.
    where = ("under [tool.patchforge] in pyproject.toml"
             if os.path.basename(project.config.source) == "pyproject.toml"
             else f"in {os.path.basename(project.config.source)}")
    return (str(path), f"defines no service {service!r} (compose-service), only "
                       f"{', '.join(repr(s) for s in services)}: the overlays' fragment mounts "
                       f"into a service of its own, and {runs} without them; set {setting} "
                       f"{where} and run `patchforge overlays` (a stack "
                       "deployed otherwise, its compose file for other services, sets "
                       "`compose-image = false`)")


# A key of a block mapping: "double quoted", 'single quoted' or plain, then its colon; then
# what follows it on the line (its value, or nothing but a comment).
_SERVICE_KEY = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'"""
                          r"""|([^\s#'"{\[][^:#]*?))\s*:(?:\s+(.*))?$""")
# A node's properties before it (an anchor `&name`, a tag `!name`, `!!str`, `!<uri>`).
_PROPERTIES = re.compile(r"(?:(?:&|!(?:<[^>]*>)?)[^\s,\[\]{}]*\s+)*")


# YAML's escapes in a double-quoted scalar (YAML 1.2, 5.7), those of one character.
_YAML_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n",
                 "v": "\v", "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"',
                 "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
                 "P": "\u2029"}
_YAML_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def _double_quoted(text: str) -> str | None:
    """A double-quoted YAML scalar's content (between the quotes, on one line) as YAML reads
    it: `\\u006c` is `l`; None for an escape YAML does not have (the file is not read)."""
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = text[i + 1:i + 2]
        if code in _YAML_ESCAPES:
            out.append(_YAML_ESCAPES[code])
            i += 2
        elif code in _YAML_HEX_ESCAPES:
            digits = text[i + 2:i + 2 + _YAML_HEX_ESCAPES[code]]
            if len(digits) != _YAML_HEX_ESCAPES[code] or \
                    not all(c in "0123456789abcdefABCDEF" for c in digits) or \
                    int(digits, 16) > 0x10FFFF:
                return None
            out.append(chr(int(digits, 16)))
            i += 2 + len(digits)
        else:
            return None
    return "".join(out)


def _mapping_key(line: str) -> tuple[str, str] | None:
    """A block mapping's key on `line` as YAML reads it (quotes and escapes undone, an anchor
    or a tag on the key left out) and what follows its colon up to a comment; None when the
    line is no key read here: an alias (`*name:`), a merge key (`<<:`), a complex key (`? `),
    flow style, an escape YAML does not have."""
    text = line.lstrip()
    text = text[_PROPERTIES.match(text).end():]  # type: ignore[union-attr]
    match = _SERVICE_KEY.match(text)
    if match is None:
        return None
    double, single, plain, rest = match.groups()
    if plain is not None and (plain.startswith(("*", "&", "!", "?", "|", ">", "%", "@", "`"))
                              or plain == "<<"):
        return None
    name = _double_quoted(double) if double is not None else \
        single.replace("''", "'") if single is not None else plain
    if name is None:
        return None
    return name, re.sub(r"(?:^|\s)#.*", "", rest or "").strip()


def _scan_flow(text: str, open_: list[str]) -> list[str]:
    """What is still open at the end of `text`, a line's value from its first character or a
    line inside a value `open_` left open: a double- or single-quoted scalar (`"`, `'`) or a
    flow collection (`[`, `{`), innermost last. YAML lets each run over several lines, and
    a line inside one is no key, whatever it holds (`  inference: 2"`)."""
    stack = list(open_)
    i = 0
    while i < len(text):
        char, top = text[i], (stack[-1] if stack else None)
        if top is None:
            if not stack and i == 0 and char in "\"'[{":
                stack.append(char)
            else:
                break  # a plain value, or what follows a closed one (a comment)
        elif top == '"':
            if char == "\\":
                i += 1
            elif char == '"':
                stack.pop()
        elif top == "'":
            if char == "'" and text[i + 1:i + 2] == "'":
                i += 1
            elif char == "'":
                stack.pop()
        elif char in "[{":
            stack.append(char)
        elif char in "]}":
            stack.pop()
        elif char in "\"'" and text[:i].rstrip()[-1:] in ("", "[", "{", ",", ":"):
            stack.append(char)  # a quoted item of the collection
        elif char == "#" and text[i - 1:i] in (" ", "\t"):
            break  # a comment, to the end of the line
        i += 1
        if not stack:
            break
    return stack


def _left_open(line: str) -> list[str]:
    """What a line's value leaves open for the lines after it (`_scan_flow`): the value after
    a key's colon or a sequence's `- `, when it begins a quoted scalar or a flow collection."""
    text = line.lstrip()
    while text == "-" or text.startswith(("- ", "-\t")):
        text = text[1:].lstrip()
    if text[:1] not in ("\"", "'", "[", "{"):
        text = text[_PROPERTIES.match(text).end():]  # type: ignore[union-attr]
        match = _SERVICE_KEY.match(text)
        if match is None:
            return []
        text = match.group(4) or ""
    text = text[_PROPERTIES.match(text).end():]  # type: ignore[union-attr]
    return _scan_flow(text, [])


# Compose's own tags, for a file that overrides another (or a later document of the same
# file, which compose merges as one): `!reset` takes away what came before, `!override`
# replaces it. Which services are left is not read from one file's lines.
_COMPOSE_MERGE_TAGS = re.compile(r"(?:^|\s)!(?:reset|override)(?:\s|$)")


def _compose_service_names(data: bytes) -> list[str] | None:
    """The keys of a compose file's top-level `services:` blocks, in block style, as compose
    reads them (a byte order mark, CRLF lines, quoted and escaped keys, anchors and tags on
    keys, every YAML document of the file: compose merges them, so their services are the
    union); None when the file says them another way, which is not guessed: flow style,
    `include:` of other files, aliases and merge keys (`<<: *common`) that bring in services
    of a mapping defined elsewhere, compose's `!reset` and `!override` on the services or on
    one of them."""
    names: list[str] = []
    in_services = False
    found = False  # a `services:` block in some document
    indent = None
    text = data.decode("utf-8", "replace")
    open_: list[str] = []  # a quoted value or flow collection the lines above left open
    for line in text.removeprefix("\ufeff").splitlines():
        if open_:
            open_ = _scan_flow(line, open_)  # a line inside a value: no key
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        open_ = _left_open(line)
        if not line[0].isspace():
            in_services = False
            if line.startswith(("---", "...")) and line[3:4] in ("", " ", "\t"):
                # A document's start (or end): compose merges the file's documents.
                after = re.sub(r"(?:^|\s)#.*", "", line[3:]).strip()
                if after[_PROPERTIES.match(after + " ").end():].strip():  # type: ignore[union-attr]
                    return None  # the document's content on its marker line
                continue
            if line.startswith("%"):
                continue  # a directive
            key = _mapping_key(line)
            if key is None:
                if line.startswith("<<") or line.startswith("*"):
                    return None  # the top-level mapping merged from elsewhere
                continue
            name, rest = key
            if name == "include":
                return None  # services of other files
            if name == "services":
                # `services:`, or with an anchor or a tag only (`services: &all`); a value
                # on the line is flow style or an alias: not read here.
                if rest[_PROPERTIES.match(rest + " ").end():].strip():  # type: ignore[union-attr]
                    return None
                if _COMPOSE_MERGE_TAGS.search(" " + rest):
                    return None
                in_services = found = True
                indent = None
            continue
        if not in_services:
            continue
        width = len(line) - len(line.lstrip())
        indent = width if indent is None else indent
        if width < indent:
            return None
        if width == indent:
            key = _mapping_key(line)
            if key is None or _COMPOSE_MERGE_TAGS.search(" " + key[1]):
                return None
            if key[0] not in names:
                names.append(key[0])
    return names if found else None


def _fragment_difference(there: bytes, expected: bytes, service: str) -> str:
    """What a compose fragment on disk lacks of the one the manifest makes, said by part: its
    mounts, its label (compose then keeps a container of old overlays), or its image."""
    def part(data: bytes, what: str) -> list[bytes]:
        lines = data.split(b"\n")
        if what == "mounts":
            return [line for line in lines
                    if line.startswith((b"      - ", b"        ", b"    volumes:"))]
        return [line for line in lines if line.startswith(b"    " + what.encode() + b":")
                or what == "labels" and line.startswith(f"      {OVERLAYS_LABEL}:".encode())]
    differ = [what for what in ("mounts", "labels", "image")
              if part(there, what) != part(expected, what)]
    said = {"mounts": f"does not mount what manifest.json pins into {service!r}",
            "labels": f"lacks the {OVERLAYS_LABEL} label of what it mounts (or has another): "
                      "compose would keep a container of older overlays",
            "image": "sets another image for the service than the configuration and the lock "
                     "say (compose-image)"}
    text = "; ".join(said[w] for w in differ) or "differs from the one manifest.json makes"
    return f"{text} (`patchforge overlays` writes it)"


def _digests(overlays: OverlaySet) -> dict[str, str]:
    """path under overlays/ -> sha256 of each overlay file and artifact copy, as SHA256SUMS."""
    return {**{f.rel: f.sha256 for f in overlays.files},
            **{rel: sha256(data) for rel, data in overlays.artifact_files.items()}}


def _read_sums(path: Path) -> dict[str, str]:
    """path -> sha256 of a SHA256SUMS-style file; {} when there is none. A line that is not
    `<64 hex>  <path>` is passed over here (`verify` names it)."""
    try:
        # (Never a FIFO or a device: read, it held the command for ever.)
        data = path.read_bytes() if path.is_file() else b""
    except OSError:
        return {}
    sums = {}
    for line in data.split(b"\n"):
        listed = parse_sums_line(line)
        if listed is not None and len(listed[0]) == 64:
            sums[listed[1].decode("utf-8", "surrogateescape")] = \
                listed[0].decode("ascii", "replace").lower()
    return sums


def changed_by_hand(project: Project, overlays: OverlaySet | None) -> list[str]:
    """The overlay files in overlays/ that hold what none of the following says they hold:
    patchforge's record of its last write here, the SHA256SUMS beside them, the set about to be
    written (`overlays`; None before one is built). Such a file was edited by hand (a habit of
    stacks that kept overlays by hand): regenerating overlays/ would throw the change away
    without a word."""
    root = project.overlays_dir
    written = _read_sums(project.state_dir / WRITTEN_RECORD)
    listed = _read_sums(root / "SHA256SUMS")
    new = _digests(overlays) if overlays is not None else {}
    changed = []
    inside = root.resolve()
    for rel in sorted({*written, *listed}):
        path = root / rel
        # Only files of overlays/ itself: a SHA256SUMS from a pull request naming
        # `../pyproject.toml` must not make the project's own files look like overlays (and the
        # hint say to remove them).
        # (The manifest, which SHA256SUMS lists where it lists no overlay, is no overlay.)
        if PurePosixPath(rel).is_absolute() or ".." in PurePosixPath(rel).parts or \
                rel in GENERATED_NAMES or not path.is_file() or path.is_symlink() or \
                not path.resolve().is_relative_to(inside):
            continue
        digest = sha256(path.read_bytes())
        if digest not in (written.get(rel), listed.get(rel), new.get(rel)):
            changed.append(rel)
    return changed


def added_by_hand(project: Project, overlays: OverlaySet | None) -> list[str]:
    """The files in overlays/ laid out as overlays (`[<profile>/]<upstream>/<path>`) that
    patchforge neither wrote (its record), nor lists (SHA256SUMS), nor is about to write: a
    hotfix dropped into the tree a stack deploys from. The swap of a new tree removed it
    without a word, where an edited one was refused. Python's byte-code caches are not
    anyone's fix and are left to the swap."""
    root = project.overlays_dir
    if not root.is_dir() or root.is_symlink():
        return []
    # By path and content: a file at a path the new overlays are about to write (a fix of
    # that file joined the series since) is a hand's unless it holds what they write.
    written = {*_read_sums(project.state_dir / WRITTEN_RECORD), *_read_sums(root / "SHA256SUMS")}
    new = _digests(overlays) if overlays is not None else {}
    added = []
    for rel, path, shaped in _overlays_contents(project)[0]:
        if not shaped or rel in written:
            continue
        if rel not in new or sha256(Path(path).read_bytes()) != new[rel]:
            added.append(rel)
    return added


def _overlays_contents(project: Project) -> tuple[list[tuple[str, str, bool]], list[str]]:
    """What overlays/ holds, in a stable order, in one walk: its files but byte-code caches and
    symbolic links, each (its path there, its path on disk, whether it is laid out as an
    overlay: under an upstream's directory, or a profile's and then an upstream's); and its
    symbolic links (to a file or a directory), by their paths there: patchforge writes none (a
    series that makes one is refused), so each was put there by a hand."""
    root = project.overlays_dir
    upstreams = set(project.upstream_names())
    profiles = set(project.config.profiles)
    files, links = [], []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(dirs + names):
            path = os.path.join(directory, name)
            rel = Path(directory, name).relative_to(root).as_posix()
            if os.path.islink(path):
                links.append(rel)
            elif name in names and not name.endswith(".pyc"):
                parts = rel.split("/")
                shaped = (len(parts) > 1 and parts[0] in upstreams) or \
                    (len(parts) > 2 and parts[0] in profiles and parts[1] in upstreams)
                files.append((rel, path, shaped))
    return files, sorted(links)


# Files patchforge writes under overlays/ by name, whatever the profiles (a fragment and a
# Dockerfile of a profile since removed from the configuration, or of the layout without
# profiles, are its own to remove).
_METADATA_NAMES = {"compose.yaml", "Dockerfile"}


def _ours_by_name(rel: str) -> bool:
    parts = rel.split("/")
    if len(parts) == 1:
        return rel in GENERATED_NAMES or rel in _METADATA_NAMES or rel in KEEP_NAMES
    return len(parts) == 2 and parts[0] != ARTIFACTS_DIR and parts[1] in _METADATA_NAMES


def _manifest_files(root: Path) -> set[str]:
    """The `file` of every overlay and artifact copy the manifest.json in overlays/ lists;
    empty when it cannot be read."""
    try:
        manifest = parse_json((root / "manifest.json").read_bytes())
        return {str(entry["file"]) for key in ("overlays", "artifacts")
                for entry in manifest.get(key) or [] if isinstance(entry, dict)
                and isinstance(entry.get("file"), str)}
    except (OSError, ValueError, AttributeError, TypeError, RecursionError, PatchforgeError):
        return set()


def not_patchforges(project: Project, overlays: OverlaySet | None) -> list[str]:
    """The files in overlays/ that patchforge neither wrote (its record of its last write, the
    SHA256SUMS and manifest.json there, its metadata names) nor is about to write as they are,
    and that are not laid out as overlays (`added_by_hand` names those, with their import): a
    tuning table or a .dockerignore put there by hand. The swap of a new tree removed them
    without a word. What patchforge wrote in an earlier write (a profile or an artifact since
    removed from the configuration) is its own to remove; so are byte-code caches."""
    root = project.overlays_dir
    if not root.is_dir() or root.is_symlink():
        return []
    ours = {*_read_sums(project.state_dir / WRITTEN_RECORD), *_read_sums(root / "SHA256SUMS"),
            *_manifest_files(root)}
    new = _digests(overlays) if overlays is not None else {}
    tree = planned_tree(overlays) if overlays is not None else {}
    files, found = _overlays_contents(project)
    for rel, path, shaped in files:
        if shaped or rel in ours or _ours_by_name(rel) or \
                os.path.basename(path).startswith(".overlays"):
            continue
        if rel in new and sha256(Path(path).read_bytes()) == new[rel]:
            continue  # what the new set writes there, byte for byte
        if rel in tree and rel not in new:
            continue  # metadata the new set writes (any name it gives)
        found.append(rel)
    return sorted(found)


def refuse_changed_by_hand(project: Project, overlays: OverlaySet | None, *,
                           rebasing: bool = False) -> None:
    """InputError (nothing written) when an overlay file was edited by hand since patchforge
    wrote it (`changed_by_hand`): the change belongs in a patch, of the overlay's profile.

    `rebasing`: asked by a rebase's write-out, the file edited while the rebase ran or was
    stopped. `import overlay` is refused until the rebase is done, so the way on keeps the
    file aside, finishes the rebase and imports it then; the write-out keeps the overlay the
    file was made from (`keep_moved_aside`), from which the import takes the change onto the
    rebased file."""
    changed = changed_by_hand(project, overlays)
    added = [] if changed else added_by_hand(project, overlays)
    if not changed and not added:
        refuse_not_patchforges(project, overlays, rebasing=rebasing)
        return
    first = (changed or added)[0]
    changed = changed or added
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    parts = PurePosixPath(first).parts
    upstreams = set(project.upstream_names())
    # overlays/[<profile>/]<upstream>/<path>: name the upstream and path for the import.
    at = next((i for i, part in enumerate(parts[:2]) if part in upstreams), None)
    # overlays/<profile>/...: the change was made in that profile's deployment alone, and is
    # a fix of that profile's series.
    profile = f" --profiles {shlex.quote(parts[0])}" if at == 1 else ""
    # A file put there by hand may be one the upstream does not have: `import overlay` takes
    # it as a new file with `--create` only.
    create = (" (with `--create` where the upstream has no such file)" if added else "")

    def import_command(file: str) -> str:
        # Shell words: the command is pasted as it is, and a name may hold a space or a `$`.
        if at is None:
            return (f"patchforge import overlay {shlex.quote(file)} --upstream U --path P "
                    "--name NAME")
        return (f"patchforge import overlay {shlex.quote(file)} --upstream "
                f"{shlex.quote(parts[at])} --path {shlex.quote('/'.join(parts[at + 1:]))} "
                f"--name NAME{profile}")
    if rebasing:
        hint = (f"keep the change and go on: `mv {shlex.quote(f'overlays/{first}')} FILE`, "
                f"then `patchforge rebase --continue`, then `{import_command('FILE')}`"
                f"{create} (it takes the change onto the rebased file); or remove the file to "
                "let the change go")
    else:
        hint = (f"make the change a patch, then regenerate: `{import_command(f'overlays/{first}')}`"
                f"{create}{_fix_edit_way(overlays, first)}; or remove the file to let the "
                "change go")
    if added:
        raise InputError(f"overlays/{first}{more} was put there by hand (patchforge did not "
                         "write it): regenerating overlays/ would delete it; nothing was written",
                         hint=hint)
    raise InputError(f"overlays/{first}{more} changed since patchforge wrote it: regenerating "
                     "overlays/ would throw that change away; nothing was written", hint=hint)


def refuse_not_patchforges(project: Project, overlays: OverlaySet | None, *,
                           rebasing: bool = False) -> None:
    """InputError (nothing written) when a file patchforge did not write is in overlays/
    (`not_patchforges`): regenerating the tree would delete it."""
    found = not_patchforges(project, overlays)
    if not found:
        return
    first = found[0]
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    later = (", then `patchforge rebase --continue`" if rebasing else "")
    it, was = ("them", "were") if more else ("it", "was")
    raise InputError(f"overlays/{first}{more} {was} not written by patchforge (no overlay "
                     "file, artifact copy or metadata of this stack): regenerating overlays/ "
                     f"would delete {it}; nothing was written",
                     hint=f"keep it outside overlays/ (`mv overlays/{first} FILE`){later}; to "
                          "ship a file of the project with the overlays, declare it under "
                          "`artifacts` in the configuration (its copy is written to "
                          "overlays/artifacts/<path>); or remove it if nothing needs it")


def _fix_edit_way(overlays: OverlaySet | None, rel: str) -> str:
    """The way to change, instead, a fix that makes overlays/`rel` (an edit of the lines it
    put there, which `import overlay` refuses as undoing it): `patchforge edit`, naming the
    fixes of the file; "" when none is known."""
    made = next((f for f in (overlays.files if overlays is not None else []) if f.rel == rel),
                None)
    if made is None or not made.patches:
        return ""
    names = [name.removesuffix(".patch") for name, _ in made.patches]
    fix = names[0] if len(names) == 1 else "NAME"
    return (f" (a new fix); or, to change a fix of that file itself, `patchforge edit {fix}`, "
            "make the change there, `patchforge refresh`, then `patchforge overlays`"
            + (f" (NAME: one of {', '.join(names)})" if len(names) > 1 else ""))


# Under .patchforge/: what overlays/<rel> held before a rebase's write-out, for an overlay file
# moved aside while the rebase was stopped (the way on `refuse_changed_by_hand` gives): the
# change made in it is the difference from this, which `import overlay` takes onto the rebased
# file.
BEFORE_REBASE_DIR = "overlays-before-rebase"


def keep_moved_aside(project: Project, store: UpstreamStore) -> None:
    """Before a rebase's write-out replaces overlays/: the files patchforge wrote there that
    are gone (moved aside, by the way on `refuse_changed_by_hand` gives) are kept under
    `.patchforge/overlays-before-rebase/` as patchforge wrote them, rebuilt from the series
    and pins the project still holds and checked against the record of that write. Nothing is
    built when no such file is gone."""
    written = _read_sums(project.state_dir / WRITTEN_RECORD)
    gone = {rel for rel in written
            if not (PurePosixPath(rel).is_absolute() or ".." in PurePosixPath(rel).parts)
            and not os.path.lexists(project.overlays_dir / rel)}
    if not gone:
        return
    for rel in gone:
        # A copy an earlier rebase kept of a file gone again is of an older overlay than the
        # one the file now gone was made from.
        forget_before_rebase(project, rel)
    try:
        before = build_overlays(project, store)
    except PatchforgeError:
        # Kept for a later import only: a file that cannot be rebuilt (an artifact gone, a
        # store offline) must not fail the write-out; the import then says what it meets.
        return
    for f in before.files:
        if f.rel in gone and f.sha256 == written[f.rel]:
            target = project.state_dir / BEFORE_REBASE_DIR / f.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, f.content)


def forget_before_rebase(project: Project, rel: str) -> None:
    """Remove what `keep_moved_aside` kept of overlays/<rel>, once its change is imported."""
    (project.state_dir / BEFORE_REBASE_DIR / rel).unlink(missing_ok=True)


def before_rebase(project: Project, rel: str) -> bytes | None:
    """What overlays/<rel> held before the rebase whose write-out kept it (`keep_moved_aside`),
    or None."""
    try:
        return (project.state_dir / BEFORE_REBASE_DIR / rel).read_bytes()
    except OSError:
        return None


def refuse_stale_profiles(project: Project, overlays: OverlaySet, profiles: list[str]) -> None:
    """`overlays --profile P` leaves the other profiles' overlay files as they are, but
    SHA256SUMS and manifest.json always cover every profile: an overlay file of another profile
    that the series now generates differently would be listed with a hash it does not have
    (`sha256sum -c` and `verify` failed, its compose file mounted the stale file). Such a run is
    refused before anything is written."""
    stale = []
    for f in overlays.files:
        path = project.overlays_dir / f.rel
        if f.profile not in profiles and path.is_file() and path.read_bytes() != f.content:
            stale.append(f.rel)
    if stale:
        more = f" and {len(stale) - 1} more" if len(stale) > 1 else ""
        raise InputError(f"overlays/{stale[0]}{more}: the series changed the overlays of other "
                         "profiles too, and SHA256SUMS and manifest.json cover every profile",
                         hint="run `patchforge overlays` without --profile")


def _remove(path: Path) -> None:
    """Remove a directory patchforge made (a file in its place is removed too)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def recover_overlays(project: Project) -> None:
    """Finish (or undo) an overlay swap interrupted by a kill."""
    root = project.overlays_dir
    old = root.parent / ".overlays.old"
    staging = root.parent / ".overlays.new"
    if old.exists() and not root.exists():
        os.replace(old, root)  # the swap was cut between its renames: put the old set back
        fsync_dir(root.parent)  # before a rebase's --abort removes the journal that needs it
    else:
        _remove(old)
    _remove(staging)


def read_whole_series(project: Project) -> None:
    """Read every upstream's series and each patch it lists as `overlays` does, raising its
    error (file:line) for one that cannot be read: a patch listed twice, a byte-order mark at
    the start of the series or of a patch, a listed file that is missing, a lost series file.
    verify passed such a series ("3 ok, 0 failed") that status, list and overlays refuse."""
    for upstream in project.upstream_names():
        project.refuse_lost_series(upstream)
        for name in project.patch_names(upstream):
            project.read_patch(upstream, name)


def verify_overlays(project: Project, *, installed: Path | None = None,
                    profile: str | None = None, hints: list[str] | None = None,
                    also=None) -> list[tuple[str, str, str]]:
    """Check SHA256SUMS like `sha256sum -c`, that manifest.json pins the same files with the
    same hashes, and, with `installed`, the pre-images in that tree.

    With `profile`, only that profile's overlay files (and the artifacts every profile ships).

    Returns (path, state, detail) rows; state is "ok", "mismatch" or "missing". `hints` gets
    what to do when `installed` holds none of the pre-images (`_installed_hint`). `also`:
    called with the manifest read here and, with `installed`, the installed.InstalledTree
    (None without), its rows added (the files of the fixes dropped as landed: ops.deploy).
    """
    root = project.overlays_dir
    sums_path = root / "SHA256SUMS"
    manifest_path = root / "manifest.json"
    rows: list[tuple[str, str, str]] = []
    read_whole_series(project)
    if not sums_path.exists() and project.overlays_swap_cut_short:
        from patchforge.state import OVERLAYS_SWAP_CUT_SHORT

        raise ConfigError(OVERLAYS_SWAP_CUT_SHORT, path=str(sums_path))
    if not sums_path.exists():
        raise ConfigError("no overlays/SHA256SUMS; run `patchforge overlays` first",
                          path=str(sums_path))
    for name in ("SHA256SUMS", "manifest.json"):
        # (Read through a FIFO there, the check never ended.)
        unfit = overlay_file_bytes(root, name)[1]
        if unfit is not None:
            raise InputError(unfit, path=str(root / name))
    profiles = {p for p in project.config.profiles}
    if profile is not None and profile not in profiles:
        raise UsageError(f"unknown profile {profile!r} (configured: "
                         f"{', '.join(sorted(profiles)) or 'none'})")
    # Read once and schema-checked before any row: a manifest left with merge-conflict markers
    # is bad input naming the file, not an internal error halfway through.
    manifest = read_manifest(root) if manifest_path.exists() or installed is not None else None

    def shipped(rel_text: str) -> bool:  # in the profile's deployment (every file without one)
        first = rel_text.split("/", 1)[0]
        return profile is None or first not in profiles or first == profile
    listed: dict[str, str] = {}
    for number, line in enumerate(sums_path.read_bytes().split(b"\n"), 1):
        if not line:
            continue
        sums_entry = parse_sums_line(line)
        # As `sha256sum -c --strict` reads it: 64 hexadecimal digits, in either case.
        if sums_entry is None or not re.fullmatch(rb"[0-9a-fA-F]{64}", sums_entry[0]):
            raise InputError("malformed SHA256SUMS line", path=str(sums_path), line=number)
        digest, rel = sums_entry
        rel_text = rel.decode("utf-8", "surrogateescape")
        if not _inside(rel_text):
            # (`overlays` never writes one: a hand edit or a merge.) Read, it was a file
            # outside overlays/ said `ok`, or a device read without end.
            raise InputError(f"SHA256SUMS names {rel_text!r}, which is not a file under "
                             "overlays/", path=str(sums_path), line=number)
        if _UNPRINTABLE.search(rel_text):
            raise InputError(f"SHA256SUMS names {rel_text!r}, which holds a control character",
                             path=str(sums_path), line=number,
                             hint="run `patchforge overlays` to write it again")
        listed[rel_text] = digest.decode().lower()
        if not shipped(rel_text):
            continue
        data, unfit = overlay_file_bytes(root, rel_text)
        if unfit is not None:
            rows.append((rel_text, "mismatch", unfit))
        elif data is None:
            rows.append((rel_text, "missing", "file not found"))
        elif sha256(data) != digest.decode().lower():
            rows.append((rel_text, "mismatch", "sha256 differs"))
        else:
            rows.append((rel_text, "ok", ""))
    if manifest is not None:
        # The manifest pins each file for verify --image, the Dockerfile and its reader: the
        # very bytes SHA256SUMS pins. A merge can resolve the two files differently, and a
        # manifest that disagreed passed as "ok".
        pinned = {e["file"]: e["sha256"] for e in manifest["overlays"]}
        pinned.update({a["file"]: a["sha256"] for a in manifest["artifacts"] if a.get("file")})
        for rel_text in sorted({*listed, *pinned}):
            if not shipped(rel_text) or listed.get(rel_text) == pinned.get(rel_text) or \
                    rel_text == "manifest.json":  # (listed where nothing else is: no overlay)
                continue
            if rel_text not in pinned:
                rows.append((rel_text, "mismatch", "SHA256SUMS lists it, manifest.json does not"))
            elif rel_text not in listed:
                rows.append((rel_text, "missing", "manifest.json lists it, SHA256SUMS does not"))
            else:
                rows.append((rel_text, "mismatch",
                             "manifest.json pins another sha256 than SHA256SUMS"))
        # An executable overlay that lost its mode (a copy, an archive, a `chmod`) passed: a
        # bind mount gives the container the host file's mode, and the script fails to run.
        for entry, what in [(e, "the upstream's file with the series") for e in
                            manifest["overlays"]] + \
                [(a, "the artifact") for a in manifest["artifacts"] if a.get("file")]:
            path = root / entry["file"]
            if entry.get("executable") and shipped(entry["file"]) and path.is_file() \
                    and not os.access(path, os.X_OK):
                rows.append((entry["file"], "mismatch",
                             f"not executable, as {what} is "
                             "(`chmod +x` it, or run `patchforge overlays`)"))
        rows += _fragment_rows(project, manifest, shipped)
        rows += series_since_overlays(project, manifest, profile)
        rows += pins_since_overlays(project, manifest, profile)
        # The artifacts themselves (what compose.yaml mounts from the project) against their pins.
        for artifact in manifest["artifacts"]:
            source = project.root / artifact["path"]
            if source.is_file() and sha256(source.read_bytes()) != artifact["sha256"]:
                rows.append((artifact["path"], "mismatch",
                             "changed since `patchforge overlays` pinned it"))
    if installed is not None and manifest is not None:
        from patchforge.installed import InstalledTree

        entries = overlay_entries(manifest, profile, str(manifest_path))
        tree = InstalledTree(installed, entries)
        overlaid = profiles_overlays(manifest, lambda e: (e["upstream"], e["path"]))
        held: dict[str, None] = {}  # the other profiles whose overlays the tree holds
        for entry in entries:
            target = entry.get("target")
            in_root = bool(target) and entry["upstream"] in tree.at_targets
            label = tree.shown(entry) + (f" [{entry['profile']}]" if entry.get("profile") else "")
            # Read as the tree's own system reads it: a symlink in it is followed inside it,
            # never on this host.
            there = tree.read(entry)
            # A tree that already holds the overlay (an image the Dockerfile baked, `/` of a
            # container with the mounts): was "not the pre-image", with a hint to rebase.
            found = there.sha256()
            holds = overlaid.get((entry["upstream"], entry["path"]), {}).get(found or "")
            if found is not None and found == entry.get("sha256"):
                rows.append((label, "ok", ALREADY_OVERLAID + there.read_through()))
            elif holds is not None and holds != entry.get("profile"):
                rows.append((label, "mismatch", other_profiles_overlay(holds, entry)))
                held.setdefault(holds, None)
            elif there.kind == "other" and there.detail:
                rows.append((label, "mismatch", there.detail))
            elif there.kind in ("directory", "other"):
                # Said as what is there: "not the pre-image this overlay was made for", with a
                # hint to deploy another version or rebase, sent the user after a version.
                what = "a directory" if there.kind == "directory" else \
                    "a named pipe, a socket or a device"
                rows.append((label, "mismatch", f"{what} is installed there, where the overlay's "
                             "pre-image is a file" + there.read_through()))
            elif entry["base_sha256"] is None:
                if there.exists():
                    rows.append((label, "mismatch", "the overlay creates this file, but it exists"
                                 + there.read_through()))
                else:
                    rows.append((label, "ok", "created by the overlay" + there.read_through()))
            elif not there.exists():
                looked = "" if in_root or not target else \
                    f" (nor at {os.path.join(str(installed), target.lstrip('/'))}, as in a root " \
                    "file system)"
                rows.append((label, "missing",
                             f"pre-image for {target or entry['path']} not found{looked}"
                             + there.read_through()))
            elif found != entry["base_sha256"]:
                rows.append((label, "mismatch",
                             "installed file is not the pre-image this overlay was made for"
                             f" ({made_for(manifest, entry)})" + there.read_through()))
            else:
                # Which file was judged: the links that led there are named, as on the
                # failing rows (and as `verify --image` names them).
                rows.append((label, "ok", "pre-image matches" + there.read_through()))
        hint = _installed_hint(Path(installed), entries, rows)
        if hint and hints is not None:
            hints.append(hint)
        if hints is not None:
            hints.extend(f"{installed} holds {holds}'s overlays: `patchforge verify --installed "
                         f"{installed} --profile {holds}` checks that deployment"
                         for holds in held)
        if also is not None:
            rows += also(manifest, tree)
    elif also is not None and manifest is not None:
        rows += also(manifest, None)
    return rows


# The detail of a file that holds the overlay itself, not its pre-image.
ALREADY_OVERLAID = "already holds this overlay (baked in, or mounted)"
# The start of the detail of a file that holds another profile's overlay of it.
OTHER_PROFILES_OVERLAY = "installed file is the "


def profiles_overlays(manifest: dict[str, Any], key) -> dict[Any, dict[str, str]]:
    """Every profile's overlay of each file of `manifest`: key(entry) -> {its sha256: the
    profile}, entries whose key is None left out. A tree or an image baked (or mounted) with
    another profile's overlays holds one of them, which is no other version of the upstream
    (`verify --installed`, `verify --image`)."""
    out: dict[Any, dict[str, str]] = {}
    for entry in manifest["overlays"]:
        where = key(entry)
        if entry.get("profile") and where is not None:
            out.setdefault(where, {}).setdefault(entry["sha256"], entry["profile"])
    return out


def other_profiles_overlay(holds: str, entry: dict[str, Any], *,
                           what: str = "installed file", how: str = "baked in, or mounted") -> str:
    """The detail of a file (`what`) that is profile `holds`'s overlay of this series, where
    `entry` (another profile's overlay of it) wants its pre-image: the tree was baked or
    mounted for that profile, which `--profile` checks (it is no other upstream version)."""
    this = f"this {entry['profile']} overlay" if entry.get("profile") else "this overlay"
    return (f"{what} is the {holds} overlay of this series ({how}), not the pre-image {this} "
            f"is made for: `--profile {holds}` checks that deployment")


def _installed_hint(installed: Path, entries: list[dict[str, Any]],
                    rows: list[tuple[str, str, str]]) -> str | None:
    """When `verify --installed DIR` found none of the pre-images under DIR, what DIR should
    have been: the directory above it when DIR is a package directory (`site-packages/vllm`
    for `site-packages`: every row said "missing", and nothing said why); otherwise what
    DIR must be."""
    wanted = [e for e in entries if e["base_sha256"] is not None]
    found = [r for r in rows if r[2].startswith(("pre-image matches", ALREADY_OVERLAID,
                                                 "installed file is not the pre-image",
                                                 OTHER_PROFILES_OVERLAY))]
    if not wanted or found:
        return None
    for entry in wanted:
        first, _, rest = entry["path"].partition("/")
        if rest and (installed / rest).is_file():
            return (f"{installed} looks like the {first}/ directory itself: give the directory "
                    f"that holds it, the upstream's install root (`--installed "
                    f"{installed.parent}`)")
    count = len({(e["upstream"], e["path"]) for e in wanted})
    return (f"{installed} holds none of the {count} pre-images: give the upstream's "
            "install root (its site-packages) or an image's root file system")


def pins_since_overlays(project: Project, manifest: dict,
                        profile: str | None = None) -> list[tuple[str, str, str]]:
    """verify's rows for the upstreams whose overlays/ were made on another revision than the
    one upstream.lock pins (`upstream pin --force`, a lock taken from another branch, without
    `overlays` after it): each overlay file is the whole file as that revision has it, with the
    series, so mounted on the pinned one it takes back upstream's own changes of the file,
    while every file is whole and as SHA256SUMS pins it. With `profile`, the upstreams of that
    profile's overlays only. An upstream the configuration or the lock no longer has says
    nothing here (status and lint name it)."""
    made: dict[str, dict] = manifest.get("upstreams") or {}
    overlaid = sorted({entry["upstream"] for entry in manifest["overlays"]
                       if profile is None or entry.get("profile") in (None, profile)})
    rows: list[tuple[str, str, str]] = []
    for upstream in overlaid:
        made_on = made.get(upstream) or {}
        if upstream not in project.config.upstreams or not made_on.get("commit"):
            continue
        try:
            pin = project.lock.pin(upstream)
        except PatchforgeError:
            continue
        if pin.commit == made_on["commit"]:
            continue
        rows.append(("manifest.json", "mismatch",
                     f"{upstream}'s overlays were made on {made_on.get('label') or '?'} "
                     f"({made_on['commit'][:12]}), but upstream.lock pins {pin.label} "
                     f"({pin.commit[:12]}): deployed there, each takes back that revision's "
                     "own changes of its file; `patchforge overlays` makes them again"))
    return rows


def series_since_overlays(project: Project, manifest: dict,
                          profile: str | None = None) -> list[tuple[str, str, str]]:
    """verify's rows for the fixes overlays/ were not made from: manifest.json names each
    patch an overlay holds with the sha256 of its file, so a fix deleted (or renamed) since,
    one changed since (an `edit` + `refresh`, a `git pull` of the stack) and one that joined
    the series since are told from the patch files alone, without the upstream. The overlays
    themselves are whole and as SHA256SUMS pins them, so verify said `ok` while a deleted fix
    was deployed and the refreshed one was in no overlay. With `profile`, that profile's
    overlays and the fixes for it only. A series that cannot be read says nothing here (lint
    and status name it)."""
    made: dict[str, dict[str, set[str]]] = {}
    for entry in manifest["overlays"]:
        if profile is None or entry.get("profile") in (None, profile):
            holding = made.setdefault(entry["upstream"], {})
            for held in entry["patches"]:
                holding.setdefault(held["name"], set()).add(held["sha256"])
    rows: list[tuple[str, str, str]] = []
    again = "`patchforge overlays` makes them again"
    for upstream in sorted(set(project.upstream_names()) | set(made)):
        held_here = made.get(upstream, {})
        names = project.patch_names(upstream) if upstream in project.config.upstreams else []
        series = [(name, project.read_patch(upstream, name),
                   project.read_patch_bytes(upstream, name)) for name in names]
        for name, patch, raw in series:
            # A fix with no change yet (`new`) is in no overlay; one for other profiles only
            # is not in this profile's.
            if not patch.file_patches or not applies_to_profile(patch, profile):
                continue
            rel = f"../series/{upstream}/{name}"
            if name not in held_here:
                rows.append((rel, "missing", "a fix of the series in no overlay: overlays/ were "
                                             f"made before it joined the series; {again}"))
            elif sha256(raw) not in held_here[name]:
                rows.append((rel, "mismatch", "overlays/ hold another version of this fix (it "
                                              f"changed since they were made); {again}"))
        listed = {name for name, _, _ in series}
        for name in sorted(set(held_here) - listed):
            rows.append((f"../series/{upstream}/{name}", "mismatch",
                         "no longer in the series (deleted or renamed since overlays/ were "
                         f"made), yet overlays/ hold it; {again}"))
    return rows


def read_manifest(overlays_dir: Path) -> dict[str, Any]:
    """overlays/manifest.json, schema-checked."""
    from patchforge.formats.schemas import validate

    path = overlays_dir / "manifest.json"
    try:
        doc = parse_json(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError("no overlays/manifest.json; run `patchforge overlays` first",
                          path=str(path)) from None
    except ValueError as exc:
        raise InputError(str(exc), path=str(path)) from None
    validate(doc, "manifest", source=str(path))
    # Each file is read where these name it (`verify`, `verify --image`): never outside
    # overlays/ (a copy's `file`) or the project (an artifact's `path`).
    for where, entries, key in (("overlays", doc["overlays"], "file"),
                                ("artifacts", doc["artifacts"], "file"),
                                ("artifacts", doc["artifacts"], "path")):
        for number, entry in enumerate(entries):
            if key in entry and not _inside(entry[key]):
                inside = "overlays/" if key == "file" else "the project"
                raise InputError(f"{where}[{number}].{key} is {entry[key]!r}, which is not a "
                                 f"file under {inside}", path=str(path),
                                 hint="run `patchforge overlays` to write it again")
    unprintable = _unprintable_string(doc, "")
    if unprintable is not None:
        where, value = unprintable
        raise InputError(f"{where} is {value!r}, which holds a control character",
                         path=str(path), hint="run `patchforge overlays` to write it again")
    return doc


# What no string of manifest.json, nor a name in SHA256SUMS, holds: verify prints them, and a
# newline would start an output line of the file's making (`::error ...::` is a workflow
# command in a CI log), an escape sequence would drive the terminal. (`overlays` never writes
# one: no patch carries a file name with a newline.) A tab is shown as it is.
_UNPRINTABLE = on_first_use(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _unprintable_string(value: Any, where: str) -> tuple[str, str] | None:
    """(where, the string) of the first string (a key too) of a JSON document holding a
    control character, or None."""
    if isinstance(value, str):
        return (where or "(top level)", value) if _UNPRINTABLE.search(value) else None
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        inner = f"{where}[{key}]" if isinstance(key, int) else \
            (f"{where}.{key}" if where else key)
        found = _unprintable_string(key, where) if isinstance(key, str) else None
        found = found or _unprintable_string(item, inner)
        if found is not None:
            return found
    return None


def _link_shown(path: Path) -> str:
    """Where the symlink `path` leads, for a message: as git quotes a path where it holds a
    control character or is not UTF-8 (a newline in it printed a line of its making, such as
    a CI runner's workflow command)."""
    link = os.readlink(path)
    if _UNPRINTABLE.search(link) or shown_name(link) != link:
        from patchforge.store.diff import quote_c_path

        return quote_c_path(link.encode("utf-8", "surrogateescape")).decode("ascii")
    return link


def overlay_file_bytes(root: Path, rel: str) -> tuple[bytes | None, str | None]:
    """The bytes of `rel` under `root` (overlays/) as the file itself: (bytes, None); (None,
    None) where nothing is there; (None, why) for what a deployment cannot take as the overlay
    file: a symlink, or a path through one (on the host that mounts it, it names whatever is
    there), a directory, a FIFO or a device (read, it never ends). Opened without following a
    link and without blocking, then looked at, so nothing swapped in between is read."""
    path = root
    for part in PurePosixPath(rel).parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return None, None
        except NotADirectoryError:
            # (Named from the project: the overlays directory itself a file was ". is a file".)
            return None, f"{root.name}/{path.parent.relative_to(root)} is a file, not a " \
                "directory" if path.parent != root else f"{root.name} is a file, not a directory"
        if stat.S_ISLNK(mode):
            at = "" if path == root / rel else f" ({path.relative_to(root)}/)"
            return None, (f"a symlink{at} to {_link_shown(path)}: an overlay file is the file "
                          "itself (mounted elsewhere, a link names whatever that host has "
                          "there): remove it and run `patchforge overlays`")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        return None, f"{kind}, not the overlay file; run `patchforge overlays`"
    with os.fdopen(fd, "rb") as handle:
        return handle.read(), None


def _inside(rel: str) -> bool:
    """Whether `rel`, a path SHA256SUMS or manifest.json names, stays inside the directory it
    is relative to: not absolute, no `..` component, not empty."""
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts and "\0" not in rel


def made_for(manifest: dict[str, Any], entry: dict[str, Any]) -> str:
    """The upstream revision an overlay was made from, as a reader names it ("vllm 0.33.0"):
    what a mismatched install must run for the overlay to fit it."""
    name = entry["upstream"]
    pin = manifest["upstreams"].get(name, {})
    return f"{name} {pin.get('label') or entry['base_commit'][:12]}"


def overlay_entries(manifest: dict[str, Any], profile: str | None,
                    source: str) -> list[dict[str, Any]]:
    """The manifest's overlays for `profile` (every profile when None)."""
    entries = manifest["overlays"]
    if profile is not None:
        known = sorted({e["profile"] for e in entries if e.get("profile")})
        if profile not in known:
            raise UsageError(f"no overlays for profile {profile!r} in {source} "
                             f"(it has: {', '.join(known) or 'no profiles'})")
        entries = [e for e in entries if e.get("profile") == profile]
    return entries
