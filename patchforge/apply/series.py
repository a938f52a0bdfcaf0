"""Applying a series in memory: the upstream files at a revision with patches applied in order.

This is what overlays, `edit`, `status` and `lint` stand on. Nothing is checked out: base files
are read from the store by revision, results stay in memory as bytes.
"""
from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Callable, Sequence

from patchforge.apply.hunks import (FileApplication, HunkOutcome, apply_file_patch,
                                    repeated_places, unproven)
from patchforge.errors import ApplyError, InputError
from patchforge.model.record import field, record

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile


def unknown_profiles(listed, configured) -> list[str]:
    """Of the profiles a patch lists, those the configuration does not declare. A stack that
    declares none has one layout, and a Profiles field there limits nothing: nothing is
    unknown. Otherwise a name that is not declared (a typo) would leave the fix out of every
    profile, silently."""
    return [p for p in listed if p not in configured] if configured else []


def refuse_unknown_profiles(patch: PatchFile, configured) -> None:
    """InputError, naming the patch file and its Profiles line, when it lists a profile the
    configuration does not declare."""
    unknown = unknown_profiles(patch.profiles, configured)
    if unknown:
        line = patch.preamble.count(b"\n") + 1
        for header in patch.fields:
            if header.name.lower() == "profiles":
                break
            line += header.raw.count(b"\n")
        raise InputError(f"Profiles names {unknown[0]!r}, which is not a configured profile "
                         f"(configured: {', '.join(configured)})", path=patch.source, line=line,
                         hint="fix the name, or declare the profile under [profiles]")


def applies_to_profile(patch: PatchFile, profile: str | None) -> bool:
    wanted = patch.profiles
    return profile is None or not wanted or profile in wanted


# --- a patch's base: the earlier patches of every one of its profiles' series ------------------
#
# Each profile's overlay is the upstream with that profile's subset of the series applied in
# order. A patch is in the series of each profile it lists; the one state it meets in all of
# them is the upstream with the earlier patches that are in all of them too: Q counts for P
# when Q's profiles include all of P's. That is the base a patch is made, edited, judged and
# rebased on. A series whose every patch is for every profile (or a stack without profiles)
# has one chain, the whole series: `profile_bases_differ` is False and every caller keeps
# its one walk.

def profile_set(patch, configured) -> frozenset[str] | None:
    """The profiles whose series hold `patch`: None for every profile (no Profiles field, one
    listing every configured profile, or a stack that declares none)."""
    listed = getattr(patch, "profiles", ())
    if not configured or not listed:
        return None
    chosen = frozenset(listed)
    return None if chosen >= frozenset(configured) else chosen


def counts_for(earlier: frozenset[str] | None, later: frozenset[str] | None) -> bool:
    """Whether a patch for the profiles `earlier` is part of the base of a later one for
    `later` (profile_set's values): it is in every series the later one is in."""
    return earlier is None or (later is not None and earlier >= later)


def profile_bases_differ(patches, configured) -> bool:
    """True when some patch of `patches` ([(name, PatchFile)]) is for some profiles only: then
    patches have different bases. False is the common case, one chain."""
    return bool(configured) and any(profile_set(patch, configured) is not None
                                    for _, patch in patches)


def profile_chains(patches, configured) -> list[tuple[frozenset[str] | None, list[int]]]:
    """The chains a series with profile bases is walked as: for each profile set of its
    patches (in order of first use) and each configured profile's own series, the positions
    of the patches that count for it, in order. A patch is decided on its own set's chain;
    a profile's chain is its overlay's series, where each patch must apply too."""
    sets: list[frozenset[str] | None] = []
    for _, patch in patches:
        chosen = profile_set(patch, configured)
        if chosen not in sets:
            sets.append(chosen)
    for profile in configured:
        if frozenset([profile]) not in sets:
            sets.append(frozenset([profile]))
    chains = []
    for chosen in sets:
        chains.append((chosen, [i for i, (_, patch) in enumerate(patches)
                                if counts_for(profile_set(patch, configured), chosen)]))
    return chains


def outcomes_on_bases(read_base, patches, own: list, **kwargs) -> list[PatchOutcome]:
    """How each of `patches` ([(name, PatchFile or PatchPart)]) applies on its own base, in
    series order: `own` gives each one's profile_set. One apply_series of the whole series
    when every patch is for every profile; otherwise one per profile set of the series, over
    the patches that count for it, each patch's outcome taken from its own set's."""
    if all(chosen is None for chosen in own):
        return apply_series(read_base, patches, **kwargs).outcomes
    found: list = [None] * len(patches)
    for chosen in dict.fromkeys(own):
        positions = [i for i, earlier in enumerate(own) if counts_for(earlier, chosen)]
        state = apply_series(read_base, [patches[i] for i in positions], **kwargs)
        for i, outcome in zip(positions, state.outcomes):
            if own[i] == chosen:
                found[i] = outcome
    return found


def profile_label(chosen: frozenset[str] | None) -> str:
    """How a message names a profile set: `every profile`, `gfx942`, `gfx942, gfx950`."""
    return "every profile" if chosen is None else ", ".join(sorted(chosen))


@record
class PatchOutcome:
    """How one patch applied: per file, the FileApplication from apply.hunks."""

    name: str
    files: list = field(default_factory=list)  # FileApplication
    # With apply_series(placement=True): the hunks placed by nearness among several matches
    # of their pre-image in a file the patch is not shown to be made on (apply.hunks.unproven).
    ambiguous: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    @property
    def worst(self) -> str:
        order = ("exact", "offset", "fuzz", "failed")
        return max((f.worst for f in self.files), key=order.index, default="exact")


@record
class SeriesState:
    """Touched files after applying patches: path -> bytes (None: deleted), with their bases."""

    base: dict[str, bytes | None] = field(default_factory=dict)
    current: dict[str, bytes | None] = field(default_factory=dict)
    touched_by: dict[str, list[str]] = field(default_factory=dict)  # path -> patch names
    outcomes: list[PatchOutcome] = field(default_factory=list)
    # The file modes the patches give: path -> the mode a patch set (`new file mode`, `new
    # mode`), or carried along by a rename or copy of a file that had one. A file without an
    # entry keeps the mode of `origins.get(path, path)` in the base (read from the store).
    modes: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)  # renamed/copied path -> base path

    def mode(self, path: str, base_mode: Callable[[str], str | None]) -> str:
        """The mode `path` has after the patches: the one a patch set, else its base file's
        (`base_mode(base path)`, None when the base has no such file: 100644)."""
        if path in self.modes:
            return self.modes[path]
        return base_mode(self.origins.get(path, path)) or "100644"

    def given_modes(self, base_mode: Callable[[str], str | None]) -> dict[str, str]:
        """path -> mode of every existing file whose mode the patches decide (set, or carried
        by a rename or copy): what a commit of `current` on the base needs to be told."""
        return {path: self.mode(path, base_mode) for path in {*self.modes, *self.origins}
                if self.current.get(path) is not None}


class PatchPart:
    """Some of a patch's file patches, with the patch file's `source` (for messages): what
    apply_series reads of a PatchFile, for a walk over only some of the patch's files (the
    worktree of an edit, the old series brought up to date one file at a time)."""

    def __init__(self, file_patches: list, source: str) -> None:
        self.file_patches = file_patches
        self.source = source


def git_mode(mode: str | None) -> str | None:
    """A mode as git writes it in a diff: a regular file is 100644 or 100755 (git's own
    canonical modes; 100664 from old tools reads as 100644)."""
    if mode is None or mode in ("100755", "120000"):
        return mode
    return "100644"


def describe_failure(name: str, application) -> str:
    failed = [h for h in application.hunks if h.status == "failed"]
    path = application.new_path or application.old_path
    hunks = ", ".join(f"#{h.index + 1}" for h in failed) or "?"
    why = f" ({application.error})" if application.error else ""
    return f"patch {name}: hunk {hunks} of {path} does not apply{why}"


def _refuse_converted_line_ends(name: str, patch, application, old: bytes | None) -> None:
    """ApplyError naming the patch file's line and the cause for a hunk that fails because an
    editor saved the patch with CRLF line ends, on an LF file (`lint`'s `line-ends` words):
    `overlays`, `overlays --check` and `check` said only that the hunk does not apply. A file
    with CR line ends of its own can hold them rightly: its failure is said as any other."""
    said = getattr(patch, "converted_line_end_words", lambda: None)()
    if said is None or old is None or b"\r" in old:
        return
    source = patch.source
    raise ApplyError(f"{describe_failure(name, application)}: {said[1]}", path=source,
                     line=said[0],
                     hint="convert its line ends back (`sed -i 's/\\r$//' "
                          f"{shlex.quote(source)}`, or `dos2unix`); `patchforge lint` names "
                          "every such file")


def apply_series(read_base: Callable[[list[str]], dict[str, bytes | None]],
                 patches: Sequence[tuple[str, PatchFile | PatchPart]], *, max_fuzz: int = 2,
                 strict: bool = True, state: SeriesState | None = None,
                 allow_zero_context: bool = False,
                 apply: Callable[..., FileApplication] = apply_file_patch,
                 placement: bool = False) -> SeriesState:
    """Apply `patches` ((name, PatchFile or PatchPart), in order) on top of base files read by
    `read_base`.

    With `strict`, a hunk that fails raises ApplyError naming the patch and hunk; otherwise the
    failure is recorded in the outcome and that file keeps its previous content. `apply` is
    apply_file_patch, or a walk's remembered applications (apply.hunks.PatchApplications).
    `placement`: each outcome also lists the hunks whose place nearness to the header's line
    chose among several (`PatchOutcome.ambiguous`), in files whose content is not the one the
    patch's `index` line names (an earlier patch changed since), or of a patch without one
    (quilt's: it names no file, apply.hunks.unproven): a search of the file per hunk.
    """
    state = state or SeriesState()
    wanted = sorted({p for _, patch in patches for fp in patch.file_patches
                     for p in (fp.old_path, fp.new_path) if p and p not in state.current})
    if wanted:
        for path, data in read_base(wanted).items():
            state.base[path] = data
            state.current[path] = data
    for name, patch in patches:
        outcome = PatchOutcome(name)
        for fp in patch.file_patches:
            source_file = getattr(patch, "source", name)
            if not allow_zero_context:
                refuse_zero_context(name, patch, fp)
            source = fp.old_path if fp.old_path is not None else fp.new_path
            assert source is not None  # a file patch has at least one side
            old = None if fp.is_new else state.current.get(source)
            if old is None and not fp.is_new:
                if strict:
                    raise ApplyError(f"patch {name}: {source} does not exist (not in the "
                                     "upstream, or an earlier patch deleted or renamed it)",
                                     path=source_file, line=fp.line_no)
                outcome.files.append(_missing(fp))
                continue
            application = apply(old, fp, max_fuzz=max_fuzz)
            outcome.files.append(application)
            if not application.ok:
                if strict and fp.binary is not None:
                    # A binary change applies exactly or not at all: say where it is.
                    raise ApplyError(describe_failure(name, application), path=source_file,
                                     line=fp.binary.index_line)
                if strict:
                    _refuse_converted_line_ends(name, patch, application, old)
                    raise ApplyError(describe_failure(name, application))
                continue
            if placement and old is not None:
                outcome.ambiguous.extend(unproven(repeated_places(old, fp, application), fp,
                                                  old))
            target = fp.new_path if fp.new_path is not None else source
            _carry_mode(state, fp, source, target)
            if fp.is_rename and fp.old_path is not None and fp.old_path != fp.new_path:
                state.current[fp.old_path] = None
                state.touched_by.setdefault(fp.old_path, []).append(name)
            state.base.setdefault(target, None)
            state.current[target] = application.content
            state.touched_by.setdefault(target, []).append(name)
        state.outcomes.append(outcome)
    return state


def refuse_zero_context(name: str, patch, fp) -> None:
    """InputError, naming the patch file and the hunk's line, for a file patch with a hunk
    without context: it can land anywhere, and GNU patch and git apply refuse such hunks
    unless told otherwise, and so do we."""
    if fp.has_zero_context:
        hunk = next(h for h in fp.hunks if h.zero_context)
        raise InputError(f"patch {name}: a hunk of {fp.path} has no context lines",
                         path=getattr(patch, "source", name), line=hunk.line_no,
                         hint="regenerate the diff with context (git diff -U3)")


def _carry_mode(state: SeriesState, fp, source: str, target: str) -> None:
    """Record the mode `target` has after `fp` (SeriesState.modes/origins)."""
    if fp.new_path is None:  # deleted
        state.modes.pop(target, None)
        state.origins.pop(target, None)
        return
    new_mode = git_mode(fp.new_mode)
    if source != target:  # renamed or copied: the new path starts with its source's mode
        state.modes.pop(target, None)
        state.origins.pop(target, None)
        if source in state.modes:
            state.modes[target] = state.modes[source]
        else:
            state.origins[target] = state.origins.get(source, source)
    if new_mode is not None:
        state.modes[target] = new_mode
        state.origins.pop(target, None)
    if fp.is_rename and source != target:
        state.modes.pop(source, None)
        state.origins.pop(source, None)


def _missing(fp):
    return FileApplication(old_path=fp.old_path, new_path=fp.new_path, content=None,
                           hunks=tuple(HunkOutcome(index=i, status="failed", offset=0, fuzz=0,
                                                   at_line=None)
                                       for i in range(max(1, len(fp.hunks)))))
