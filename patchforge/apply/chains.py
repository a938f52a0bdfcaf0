"""A patch in another profile's series: its change on its own base, carried there.

A patch is made on its base (apply.series: the upstream plus the earlier patches in every one
of its profiles' series). In the series of a profile that also holds patches for that profile
alone, the file it meets differs from its base's by those patches: a search of that file for
the diff's context asks the wrong question (a shifted repeated block takes the change into
another block; context a profile's fix changed needs fuzz there, or fails, while the change
goes in cleanly). The question asked instead, by overlays, lint, status, refresh and the
rebase alike, is git's: a 3-way merge of (the file on the patch's base, the file in that
profile's series, the file on the patch's base with the patch). Where the profile's series has
the file as the base has it, that is the patch's own result, with no merge.

A series whose every patch is for every profile has one chain, and none of this is asked.
"""
from __future__ import annotations

from typing import Callable, Sequence

from patchforge.apply.series import (PatchOutcome, SeriesState, apply_series, counts_for,
                                     profile_chains, profile_label, profile_set)
from patchforge.errors import ApplyError
from patchforge.model.record import field, record


def carry_file(before: bytes | None, after: bytes | None,
               ours: bytes | None) -> tuple[bool, bytes | None]:
    """(whether it goes in, the file) for one file of a patch carried into another chain:
    `before`/`after` the file on the patch's own base without and with it, `ours` the file
    in the other chain before it. A chain holding the base's file (or the result already)
    takes the result; otherwise git's 3-way merge; a file one side lacks and the other has
    differently does not go in (`ours` is returned as it was)."""
    if ours == before or ours == after:
        return True, after
    if before is None or after is None or ours is None:
        return False, ours
    from patchforge.store.diff import merge_file

    clean, merged = merge_file(before, ours, after)
    return (True, merged) if clean else (False, ours)


def carry_files(paths, before: Callable[[str], bytes | None],
                after: Callable[[str], bytes | None],
                ours: Callable[[str], bytes | None],
                renames: dict[str, str] | None = None,
                ) -> tuple[dict[str, bytes | None], str | None]:
    """({path: content}, None) for a patch carried into another chain, each of its files
    (`paths`: those it changes, created, deleted or renamed away included) by carry_file, or
    ({}, the first path that does not go in: nothing is carried then). A file the patch renames
    (`renames`: old path -> new, patch_renames) is one change of two paths, as `git apply`
    takes it: the other chain's file at the old path, changed there by a patch of its own, is
    merged with the patch's onto the new path and leaves the old one (judged path by path, the
    old path "did not go in": the patch removes a file the chain holds differently)."""
    files: dict[str, bytes | None] = {}
    for old, new in (renames or {}).items():
        if old not in paths or new not in paths:
            continue
        theirs, was = ours(old), before(old)
        if theirs is None or was is None or after(old) is not None or before(new) is not None \
                or ours(new) is not None or theirs == was:
            continue  # not a rename there, or the chain holds the base's file: path by path
        ok, content = carry_file(was, after(new), theirs)
        if not ok:
            return {}, old
        files[old], files[new] = None, content
    for path in paths:
        if path in files:
            continue
        ok, content = carry_file(before(path), after(path), ours(path))
        if not ok:
            return {}, path
        files[path] = content
    return files, None


def patch_renames(patch) -> dict[str, str]:
    """The files `patch` renames: old path -> new path."""
    return {fp.old_path: fp.new_path for fp in patch.file_patches
            if getattr(fp, "is_rename", False) and fp.old_path and fp.new_path
            and fp.old_path != fp.new_path}


def profiles_note(chosen: frozenset[str] | None) -> str:
    """`every profile`, `profile gfx942`, `profiles gfx942, gfx950`."""
    if chosen is None:
        return "every profile"
    return ("profile " if len(chosen) == 1 else "profiles ") + profile_label(chosen)


def chain_name(chosen: frozenset[str] | None) -> str:
    """How a message names a chain: `gfx942's series`, `the series of gfx942, gfx950`."""
    return f"the series of {profile_label(chosen)}"


@record
class ChainProblem:
    """A patch whose change does not go into the series of `chain` (a profile set): it
    changes lines of `path` that `met` (earlier patches there not in its own base, with
    their profiles) changed before it."""

    name: str
    chain: frozenset | None
    path: str
    met: list = field(default_factory=list)

    @property
    def profiles(self) -> str:
        return profile_label(self.chain)

    def describe(self) -> str:
        who = ", ".join(self.met) or "the patches for other profiles"
        return (f"does not apply in {chain_name(self.chain)}: it changes lines of {self.path} "
                f"that {who} changed before it there")

    @property
    def remedy(self) -> str:
        return REMEDY


@record
class CollisionProblem:
    """A patch that does not go into the series of `chain` (a profile set) because a path it
    makes meets `path` of another patch there (`met`, with their profiles: a file where it
    makes a directory, or the reverse; stack.creation_collisions says how, `said`)."""

    name: str
    chain: frozenset | None
    path: str
    said: str
    met: list = field(default_factory=list)

    def describe(self) -> str:
        return f"does not go into {chain_name(self.chain)}: it {self.said}"

    @property
    def remedy(self) -> str:
        return ("take the path out of it (a file only some profiles need goes into a fix of "
                "their own: `patchforge new NAME --profiles P`)")


REMEDY = ("make it leave those lines alone (two fixes that change neighbouring lines "
          "differently for some profiles are one fix per profile)")


def met_in_chain(patches, own, held, at: int, path: str | None = None) -> list[str]:
    """The patches of a chain (`held`: positions) before position `at` that are not in its
    own base, touching `path` when given, named with their profiles: the ones its change
    meets there."""
    return [f"{n} ({profile_label(own[i])})" for i, (n, patch) in enumerate(patches)
            if i < at and i in held and not counts_for(own[i], own[at])
            and (path is None or path in patch_paths(patch))]


def patch_paths(patch) -> set[str]:
    """Every path `patch` names, either side (a file it creates, deletes or renames too)."""
    return {p for fp in patch.file_patches for p in (fp.old_path, fp.new_path) if p}


class _Set:
    """Stands for a patch of the profile set `chosen` where profile_chains reads one."""

    def __init__(self, chosen: frozenset[str] | None) -> None:
        self.profiles = sorted(chosen) if chosen is not None else []


@record
class ChainsState:
    """A series walked on its chains (apply_on_chains): each chain's files (`states`, by
    profile set: each profile set of the series and each configured profile's own series,
    the one its overlays are), each patch's outcome on its own base (`outcomes`, series
    order) and the patches that do not go into a chain that holds them (`problems`)."""

    states: dict = field(default_factory=dict)
    held: dict = field(default_factory=dict)  # profile set -> positions
    outcomes: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    own: list = field(default_factory=list)

    def profile(self, profile: str) -> SeriesState:
        """The state of one profile's own series (its overlays)."""
        return self.states[frozenset([profile])]


def apply_on_chains(read_base: Callable[[list[str]], dict[str, bytes | None]],
                    patches: Sequence, configured, *, own: list | None = None,
                    also=(), on_patch=None, after_patch=None, **kwargs) -> ChainsState:
    """Walk `patches` ([(name, PatchFile or PatchPart)]) of a series with profile bases
    (apply.series.profile_bases_differ) on every chain (apply.series.profile_chains): each
    patch applied on its own base's chain (apply_series with `kwargs`: its outcome), then
    carried into every other chain that holds it (carry_files). A patch that does not apply on
    its base is carried nowhere (its outcome says it); one that does not go into a chain is a
    ChainProblem there, and that chain goes on without it. An ApplyError of a strict walk
    names the patch and its profiles. `own`: each patch's profile set
    (apply.series.profile_set), when `patches` are PatchParts; `also`: more profile sets to
    walk a chain of (a patch's base whose set no patch of `patches` has); `on_patch(position,
    files before it, its own chain's state)` is called after each patch is applied there;
    `after_patch(position, the walk so far)` once it went into every chain it goes into."""
    cache: dict[str, bytes | None] = {}

    def read(paths):
        missing = [p for p in paths if p not in cache]
        if missing:
            cache.update(read_base(missing))
        return {p: cache.get(p) for p in paths}

    if own is None:
        own = [profile_set(patch, configured) for _, patch in patches]
    found = ChainsState(own=own)
    for chosen, positions in profile_chains([(None, _Set(chosen)) for chosen in own],
                                            configured):
        found.states[chosen] = SeriesState()
        found.held[chosen] = set(positions)
    for chosen in also:
        if chosen not in found.states:
            found.states[chosen] = SeriesState()
            found.held[chosen] = {i for i, mine in enumerate(own) if counts_for(mine, chosen)}
    found.outcomes = [None] * len(patches)

    def fill(state: SeriesState, paths) -> None:
        wanted = [p for p in paths if p not in state.current]
        for path, data in read(wanted).items():
            state.base[path] = data
            state.current[path] = data

    for position, (name, patch) in enumerate(patches):
        paths = sorted(patch_paths(patch))
        mine = found.states[own[position]]
        fill(mine, paths)
        before = {p: mine.current.get(p) for p in paths}
        try:
            apply_series(read, [(name, patch)], state=mine, **kwargs)
        except ApplyError as exc:
            exc.message = f"{exc.message} ({profiles_note(own[position])})"
            exc.args = (exc.message,)
            raise
        outcome: PatchOutcome = mine.outcomes[-1]
        found.outcomes[position] = outcome
        if on_patch is not None:
            on_patch(position, before, mine)
        if not outcome.ok:
            if after_patch is not None:
                after_patch(position, found)
            continue
        for chosen, state in found.states.items():
            if chosen == own[position] or position not in found.held[chosen]:
                continue
            fill(state, paths)
            stuck = carry_into(state, name, paths, before, mine, patch_renames(patch))
            if stuck is not None:
                found.problems.append(ChainProblem(
                    name, chosen, stuck,
                    met_in_chain(patches, own, found.held[chosen], position, stuck)))
        if after_patch is not None:
            after_patch(position, found)
    return found


def carry_into(state: SeriesState, name: str, paths, before: dict[str, bytes | None],
               mine: SeriesState, renames: dict[str, str] | None = None) -> str | None:
    """Carry the patch `name` into the chain `state` (its files `paths` already read there):
    `before` its files on its own base without it, `mine` its own chain's state with it
    (carry_files; the modes and origins it gives come along). Returns None, or the first path
    that does not go in, `state` then left as it was."""
    files, stuck = carry_files(paths, before.get, mine.current.get, state.current.get, renames)
    if stuck is not None:
        return stuck
    for path, content in files.items():
        state.base.setdefault(path, None)
        state.current[path] = content
        state.touched_by.setdefault(path, []).append(name)
        for given, source in ((state.modes, mine.modes), (state.origins, mine.origins)):
            if path in source:
                given[path] = source[path]
            else:
                given.pop(path, None)
    return None


def profile_state(read_base: Callable[[list[str]], dict[str, bytes | None]], patches: Sequence,
                  configured, profile: str) -> SeriesState:
    """The files of one profile's series (`patches`: the whole series), as its overlays are
    made: the series applied as it is, or (profile bases) walked on its chains. A patch that
    does not apply, or does not go into that series, is an ApplyError naming it and the
    profile."""
    from patchforge.apply.series import applies_to_profile, profile_bases_differ

    if not profile_bases_differ(patches, configured):
        try:
            return apply_series(read_base, [(n, p) for n, p in patches
                                            if applies_to_profile(p, profile)], strict=True)
        except ApplyError as exc:
            exc.message = f"{exc.message} (profile {profile})"
            exc.args = (exc.message,)
            raise
    chains = apply_on_chains(read_base, patches, configured, strict=True)
    for problem in chains.problems:
        if profile in (problem.chain or ()):
            raise ApplyError(f"patch {problem.name} {problem.describe()}")
    return chains.profile(profile)


def base_state(read_base: Callable[[list[str]], dict[str, bytes | None]], patches: Sequence,
               configured, chosen: frozenset[str] | None, *, own: list | None = None,
               strict: bool = True) -> SeriesState:
    """The files `patches` ([(name, PatchFile or PatchPart)], the series before a patch)
    leave on the base of a patch for the profile set `chosen`: the patches that count for it
    (apply.series.counts_for), each as its profiles' series holds it. Those for more profiles
    after one for `chosen`'s alone are carried from their own base (apply_on_chains); where
    none is, the patches that count are applied as they are (the common case). With `strict`,
    one that does not apply on its base, or does not go into `chosen`'s series, is an
    ApplyError naming it."""
    if own is None:
        own = [profile_set(patch, configured) for _, patch in patches]
    positions = [i for i, mine in enumerate(own) if counts_for(mine, chosen)]
    seen: set = set()
    carried = False
    for i in positions:
        if any(not counts_for(earlier, own[i]) for earlier in seen):
            carried = True
            break
        seen.add(own[i])
    if not carried:
        return apply_series(read_base, [patches[i] for i in positions], strict=strict)
    chains = apply_on_chains(read_base, patches, configured, own=own, also=[chosen],
                             strict=False)
    if strict:
        from patchforge.apply.series import describe_failure

        for i in positions:
            outcome = chains.outcomes[i]
            if not outcome.ok:
                failed = next(f for f in outcome.files if not f.ok)
                raise ApplyError(f"{describe_failure(outcome.name, failed)} "
                                 f"({profiles_note(own[i])})")
        for problem in chains.problems:
            if problem.chain == chosen:
                raise ApplyError(f"patch {problem.name} {problem.describe()}")
    return chains.states[chosen]
