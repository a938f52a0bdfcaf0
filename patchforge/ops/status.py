"""`status`: for every patch, does it still apply to the target, and if not, did it land?

The target defaults to the locked revisions ("is my series healthy"); `--against SPEC` names
another. Patches are judged in series order on the target with the earlier, still-needed patches
applied, exactly as a rebase would meet them. Nothing is checked out.
"""
from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from patchforge import logs
from patchforge.background import Background
from patchforge.forwarded import drop_when, forwarded_info, lookup_forwarded
from patchforge.judge import (HistoryIndex, LazyHistory, SeriesJudge, SquashPaths, Target,
                              _patch_paths, judge_on_profile_bases, read_history,
                              series_history_index, series_renames, where_landed)
from patchforge.model.findings import no_diff_said
from patchforge.model.record import field, record
from patchforge.model.words import counted

if TYPE_CHECKING:
    from patchforge.detect import PatchVerdict
    from patchforge.model.lock import UpstreamPin
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# A patch that applies only with fuzz is a warning, not one of these: it applies, and the
# rebase moves it with new context (an error under `status --strict`, as lint's `fuzz`);
# unless the judge says more of it (its change found landed at another place): see below.
ATTENTION_STATES = {"merges", "conflict", "upstreamed", "partial", "obsolete", "unsure"}


@record
class PatchStatus:
    upstream: str
    name: str
    state: str
    confidence: str | None
    hunks_total: int
    hunks_landed: int
    evidence: list[str]
    files: list[dict]
    landed_in: str | None = None
    decided_by: str | None = None  # content | history: which evidence decided a landing
    forwarded: dict | None = None
    drop_when: dict | None = None
    attention: bool = False
    verdict: PatchVerdict | None = field(default=None, repr=False)
    rebase: str | None = None  # what a rebase onto this target does: drop | move | stop

    def to_json(self) -> dict:
        return {"upstream": self.upstream, "name": self.name, "state": self.state,
                "confidence": self.confidence, "hunks": {"total": self.hunks_total,
                                                         "landed": self.hunks_landed},
                "evidence": self.evidence, "files": self.files, "landed_in": self.landed_in,
                "decided_by": self.decided_by,
                "forwarded": self.forwarded, "drop_when": self.drop_when,
                "needs_attention": self.attention, "rebase": self.rebase}


def _mark_links(store: UpstreamStore, target: Target, patches,
                conflicting: list[PatchStatus]) -> None:
    """A patch that conflicts because a file it changes is a symlink at the target (upstream
    moved the code and left a link): `rebase --to` refuses such a series before it starts
    (stack.refuse_symlinked_paths), so the evidence says so and the way on, as the rebase
    does. Asked only of the conflicting patches: the link makes their hunks fail."""
    from patchforge.errors import UnsafePathError
    from patchforge.stack import refuse_symlinked_paths

    by_name = dict(patches)
    for status in conflicting:
        try:
            refuse_symlinked_paths(store, target.commit, [(status.name, by_name[status.name])],
                                   target=target.label)
        except UnsafePathError as refused:
            said = refused.message.removeprefix(f"patch {status.name}: ")
            status.evidence.insert(0, f"{said}: `rebase --to` refuses the series "
                                      f"({refused.hint})")


def _mark_removals(project: Project, store: UpstreamStore, commit: str, patches,
                   by_name: dict[str, PatchStatus]) -> None:
    """At the pin, where the project writes overlays: a patch that deletes (or renames away)
    an upstream file no later patch makes again applies, but `overlays` refuses the series
    (an overlay cannot delete a file in the image); so does one that makes a symlink
    (overlay.series_links), or writes a file whose name is not UTF-8. Said as needing
    attention, so that the series' one check does not stay green over what the next
    `overlays` refuses (a patch copied in by hand, or the patch that made the file again
    deleted)."""
    from patchforge.overlay import series_removals

    if not project.makes_overlays:
        return
    for name, path, renamed in series_removals(project, store, commit, patches):
        what = f"renames {path} to {renamed}" if renamed else f"deletes {path}"
        found = by_name[name]
        found.attention = True
        found.evidence.append(f"{what}, an upstream file no later patch makes again: "
                              "`overlays` refuses the series (an overlay cannot delete a file "
                              f"in the image); `patchforge edit "
                              f"{project.patch_word(found.upstream, name)}`, put {path} back, "
                              "then `patchforge refresh`")
    from patchforge.overlay import LINK_REFUSED, series_links

    for name, path in series_links(project, patches):
        found = by_name[name]
        found.attention = True
        found.evidence.append(f"makes {path} a symlink: {LINK_REFUSED}; make the link in the "
                              "image (a Dockerfile step) and take it out of the patch")
    from patchforge.overlay import NAME_REFUSED, series_unnamed_files, shown_name

    for name, path in series_unnamed_files(patches):
        found = by_name[name]
        found.attention = True
        found.evidence.append(f"writes {shown_name(path)}: {NAME_REFUSED}; rename the file in "
                              "the upstream, or take it out of the patch")


def _mark_move_to_unnamed(project: Project, fix: str, patch, judgement,
                          status: PatchStatus) -> None:
    """Against another target, where the project writes overlays: a fix that follows upstream
    to a file name that is not UTF-8 moves in memory, but `rebase --to` refuses the move
    (overlay.followed_to_unnamed): needing attention, said as the rebase says it."""
    written = [change.new_path for change in judgement.changes]
    if all(path is None or path.isascii() for path in written) or \
            not project.makes_overlays:
        return
    from patchforge.overlay import (UNNAMED_MOVE_WAY_OUT, followed_to_unnamed,
                                    move_to_unnamed_said)

    found = followed_to_unnamed(patch, written)
    if found:
        status.attention = True
        status.rebase = "stop"
        status.evidence.append(f"{move_to_unnamed_said(fix, found[0])}: `rebase --to` refuses "
                               f"the move ({UNNAMED_MOVE_WAY_OUT})")


def _mark_outside_install_root(store: UpstreamStore, kind: str, commit: str, patches,
                               by_name: dict[str, PatchStatus]) -> None:
    """A patch that changes a wheel's file pip installs outside the install root
    (stack.outside_install_root) may apply, but no overlay can deploy it and `overlays`
    refuses the series: needing attention, with the way on, at any target."""
    from patchforge.stack import outside_install_root, outside_install_root_said

    for name, patch in patches:
        found = outside_install_root(store, kind, commit, patch.paths)
        if found is not None:
            by_name[name].attention = True
            by_name[name].evidence.append(outside_install_root_said(name, found))


def _files_json(patch: PatchFile, verdict: PatchVerdict) -> list[dict]:
    """Each file's hunks as `--json` lists them. A file gone upstream has no verdicts (nothing
    to judge them on): its hunks are listed all the same, as not applying and landed nowhere,
    so that the files' hunks add up to the patch's `hunks.total`."""
    from patchforge.detect import hunk_count

    by_path = {fp.source_path: fp for fp in patch.file_patches}
    out = []
    for f in verdict.files:
        hunks = [{"index": h.index + 1, "forward": h.forward, "landed": h.landed}
                 for h in f.hunks]
        if not hunks and f.target_path is None and f.path in by_path:
            hunks = [{"index": i + 1, "forward": "failed", "landed": None}
                     for i in range(hunk_count(by_path[f.path]))]
        out.append({"path": f.path, "target_path": f.target_path, "hunks": hunks})
    return out


def series_status(project: Project, store: UpstreamStore, targets: dict[str, Target], *, forge=None,
                  upstreams: list[str] | None = None, lookups=None,
                  every_hunk: bool = True) -> list[PatchStatus]:
    """Each patch of the series judged against its upstream's target; `lookups`: the forge's
    answers asked ahead (forwarded.ask_forge_ahead), else asked here. `every_hunk` False (a
    caller that shows each patch's first line of evidence only: status's table): the hunks
    of a patch a gone file makes obsolete are not judged, nor in its `files`."""
    from patchforge.apply.series import profile_bases_differ, unknown_profiles

    out: list[PatchStatus] = []
    configured_profiles = list(project.config.profiles)
    chosen = [u for u in (upstreams or project.upstream_names()) if u in targets]
    patch_names = {upstream: project.patch_names(upstream) for upstream in chosen}
    # The threads reading histories are joined when the block is left, by an error too.
    with ExitStack() as threads:
        # The history between base and target (a git process, the GIL free) is walked by a
        # second thread from now on: the walk needs no patch, so it runs while this thread
        # parses the series and judges the patches; only landed patches, and those the content
        # checks cannot decide, will need it.
        walks = {upstream: threads.enter_context(Background(read_history, store,
                                                            targets[upstream]))
                 for upstream in chosen if patch_names[upstream] and
                 targets[upstream].base_commit != targets[upstream].commit}
        series = {upstream: [(name, project.read_patch(upstream, name))
                             for name in patch_names[upstream]] for upstream in chosen}
        if lookups is None:
            lookups = lookup_forwarded(project, forge, [patch for patches in series.values()
                                                        for _, patch in patches])
        for upstream in chosen:
            target = targets[upstream]
            logs.info("patchforge.status", "%s: judging %s against %s", upstream,
                      counted(len(series[upstream]), "patch", "patches"), target.label)
            package = getattr(project.config.upstreams.get(upstream), "package", None)
            names = {upstream} | ({package} if package else set())
            # (status, patch, the own-place diffs its walk made: its landing lookup's too)
            landed: list[tuple[PatchStatus, PatchFile, dict]] = []
            patches = series[upstream]
            # The index of that history (and the diffs the squash check reads) is made on the
            # second thread too.
            squash = SquashPaths()
            history = threads.enter_context(
                Background(series_history_index, store, target, walks[upstream].result,
                           patches, squash)) \
                if upstream in walks and any(patch.paths for _, patch in patches) else None
            # Which of the series' files upstream renamed (git's rename detection, a git
            # process: judge.series_renames, the rebase's question) is asked on the second
            # thread too, once for all of them: only a file gone from the target asks, and
            # the answer waits there.
            asked = series_renames(store, target, patches)
            renames = (asked[0], threads.enter_context(Background(asked[1])).result) \
                if asked is not None else None
            # A stop is reported, not put in a worktree: its first conflicting file decides it.
            # Only the files a 3-way merge needs of the old series are walked (lazy_old).

            def make_judge(chain):
                lazy = LazyHistory(history.result, chain,
                                   lambda paths: store.read_blobs(target.base_commit, paths),
                                   ready=history.done, squash=squash) \
                    if history is not None else None
                if lazy is not None:
                    threads.callback(lazy.close)  # the diffs started and not taken (an error)
                return SeriesJudge(store, target, stop_files=False, history=lazy,
                                   renames=renames, lazy_old=True,
                                   past_keeps_stops=True, obsolete_hunks=every_hunk)

            if profile_bases_differ(patches, configured_profiles):
                # Each patch judged on its own base (its profiles' common series), as a rebase
                # moves it: never on top of another profile's fix.
                judged = judge_on_profile_bases(make_judge, patches, configured_profiles)
            else:
                judge = make_judge(patches)
                # The series' files are read by a second thread too, in series order, while
                # this one judges (the missing ones fetched first, all together).
                with judge.reading_ahead(patches):
                    # A conflict's history question waits until the walk is over (settle):
                    # its answer changes nothing the next patches meet, and its diffs are read
                    # by git meanwhile, where the walk would have waited for them.
                    judged = [(judge, judge.judge(name, patch, defer_history=True))
                              for name, patch in patches]
            for (name, patch), (judge, judgement) in zip(patches, judged):
                judgement = judge.settle(judgement)
                verdict = judgement.verdict
                status = PatchStatus(
                    upstream=upstream, name=name, state=judgement.state,
                    confidence=verdict.confidence if judgement.outcome == "landed" else None,
                    hunks_total=verdict.hunks_total,
                    hunks_landed=verdict.hunks_landed, evidence=judgement.evidence,
                    files=_files_json(patch, verdict),
                    decided_by=verdict.decided_by, verdict=verdict, rebase=judgement.rebase_action)
                if not patch.file_patches and judgement.state == "applies":
                    # Header only (`new`, nothing refreshed; a merge that lost the diff): it
                    # applies because it changes nothing, which "applies" would hide. Said as
                    # lint says it (a warning there: no attention here either).
                    status.state = "empty"
                    status.evidence.insert(0, no_diff_said(
                        name, project.patch_word(upstream, name)))
                if judgement.parts:
                    # A change inside a hunk landed, another not: neither hunk check says it.
                    from patchforge.apply.parts import parts_said

                    status.evidence.insert(0, parts_said(patch, judgement.parts))
                if judgement.state == "conflict" and not status.evidence:
                    said = _merge_conflict_said(judgement, status.files)
                    if said:
                        status.evidence.append(said)
                if judgement.outcome == "landed" and verdict.state != "upstreamed":
                    # git's merge found it all there where the hunk checks could not say.
                    status.confidence = "high"
                    status.hunks_landed = verdict.hunks_total
                if judgement.state in ("upstreamed", "partial"):
                    landed.append((status, patch, judge.places.pairs_made))
                status.forwarded = forwarded_info(project, store, patch, target, forge, lookups)
                if status.forwarded and status.forwarded.get("merged") and \
                        status.forwarded.get("included"):
                    status.evidence.append(f"forwarded PR merged ({status.forwarded['url']}) and "
                                           "included in the target")
                status.drop_when = drop_when(patch, target, status.forwarded, store=store,
                                             forge=forge, names=names, lookups=lookups)
                broken = judgement.stop_kind == "invariant"
                # A fuzz the judge has evidence about (history found its change landed at
                # another place, a part of it landed, its PR merged) needs a look; a bare one
                # is a warning.
                fuzz_said = judgement.state == "fuzz" and bool(status.evidence)
                status.attention = judgement.state in ATTENTION_STATES or fuzz_said or \
                    broken or bool(status.drop_when and status.drop_when.get("true"))
                unknown = unknown_profiles(patch.profiles, configured_profiles)
                if unknown:
                    # A typo in Profiles puts the fix in no profile: every overlay and
                    # deployment goes without it while the patch "applies".
                    status.attention = True
                    known = [p for p in patch.profiles if p not in unknown]
                    status.evidence.insert(0, 
                        f"Profiles names {unknown[0]!r}, not a configured profile: the fix is "
                        + (f"only in {', '.join(known)}'s overlays" if known else
                           "in no profile's overlays") + " (`overlays` refuses it)")
                if judgement.outcome == "applies" and target.base_commit != target.commit:
                    _mark_move_to_unnamed(project, f"{upstream}/{name}", patch, judgement,
                                          status)
                out.append(status)
            if target.base_commit == target.commit and \
                    any(fp.is_new or fp.is_rename or fp.is_copy
                        for _, patch in patches for fp in patch.file_patches):
                # At the pin, a creation onto a filled path (a directory or file of the
                # upstream, a file an earlier patch made) applies in memory, but `git apply`
                # of the series and `overlays` refuse it: never "applies".
                from patchforge.stack import profile_collisions
                by_name = {s.name: s for s in out if s.upstream == upstream}
                for name, _, _, message, _ in profile_collisions(project, store, target.commit,
                                                                 patches):
                    found = by_name[name]
                    found.state, found.attention = "conflict", True
                    found.evidence.append(f"{message}: `git apply` and `overlays` refuse it")
            if target.base_commit != target.commit:
                _mark_links(store, target, patches,
                            [s for s in out if s.upstream == upstream and s.state == "conflict"])
            if target.base_commit == target.commit:
                _mark_removals(project, store, target.commit, patches,
                               {s.name: s for s in out if s.upstream == upstream})
            # (The patches' paths are the pin's: its NAME-VER.data, not the target's.)
            _mark_outside_install_root(store, project.lock.pin(upstream).kind,
                                       target.base_commit, patches,
                                       {s.name: s for s in out if s.upstream == upstream})
            # Nothing landed: the history's answer is not needed (the thread ends with the block).
            index = history.result() if history is not None and landed else None
            if index is not None:
                # Where the landed fixes came from: one read of the history for the whole series
                # (again for the paths of a patch that followed a rename, outside the series').
                needed = {p for status, _, _ in landed for p in _patch_paths(status.verdict)}
                if not needed <= set(index.paths):
                    index = HistoryIndex(store, target, sorted(needed))
                matches = index.patch_id_matches([(id(status), patch.diff,
                                                   _patch_paths(status.verdict))
                                                  for status, patch, _ in landed])
                for status, patch, pairs_made in landed:
                    status.landed_in, more = where_landed(store, target, patch, status.verdict,
                                                          index, pairs_made=pairs_made)
                    status.evidence.extend(more)
                    for commit in matches.get(id(status), []):
                        status.evidence.append(f"patch-id matches upstream commit {commit}")
    return out


def _merge_conflict_said(judgement, files: list[dict]) -> str | None:
    """The evidence of a conflict that no hunk's failure explains: every hunk applies forward
    (with fuzz: the lines beside the patch's changed on the target), and git's 3-way merge of
    the file conflicts. The judge gives no evidence for it and the table's cell stayed empty
    (a directory or wheel upstream has no commit to name either): what conflicts, where. A
    conflict with a failing hunk is said by its hunks (`hunk 2 of 3 fails in PATH`), as
    before; None then."""
    if any(h["forward"] == "failed" for entry in files for h in entry["hunks"]):
        return None
    said = []
    for path in judgement.files:
        entry = next((f for f in files if (f.get("target_path") or f["path"]) == path), None)
        hunks = entry["hunks"] if entry is not None else []
        fuzzy = [str(h["index"]) for h in hunks if h["forward"] == "fuzz"]
        text = f"the 3-way merge conflicts in {path}"
        if fuzzy:
            which = f"hunk {fuzzy[0]} of {len(hunks)} applies" if len(fuzzy) == 1 else \
                f"hunks {', '.join(fuzzy)} of {len(hunks)} apply"
            text += f": the target changed lines beside the patch's ({which} only with fuzz)"
        said.append(text)
    return "; ".join(said) or judgement.message or None


def bring_targets(project: Project, store: UpstreamStore,
                  specs: dict[str, str] | None) -> dict[str, tuple[str, UpstreamPin]]:
    """The network a status needs, asked before it takes the project's read lock (a rebase's
    write-out must not wait on it; a fresh clone's first status fetches its pins): each locked
    revision the store lacks brought in, and each `--against` SPEC resolved into a pin,
    returned per upstream as (SPEC, pin) for resolve_targets to take."""
    from patchforge.pins import ensure_pinned, pin_for_spec

    lock = project.lock
    resolved = {}
    for upstream in project.upstream_names():
        if upstream not in lock.upstreams:
            continue
        ensure_pinned(project, store, upstream, lock.pin(upstream))
        if specs and upstream in specs:
            resolved[upstream] = (specs[upstream],
                                  pin_for_spec(project, store, project.config.upstream(upstream),
                                               specs[upstream]))
    return resolved


def targets_ahead(project: Project,
                  resolved: dict[str, tuple[str, UpstreamPin]]) -> dict[str, Target]:
    """The targets as bring_targets left them (the lock read without the read lock): what the
    forge is asked about ahead, never what is judged (resolve_targets, under the lock)."""
    lock = project.lock
    targets = {}
    for upstream in project.upstream_names():
        pin = lock.upstreams.get(upstream)
        if pin is not None:
            new = resolved[upstream][1] if upstream in resolved else pin
            targets[upstream] = Target(upstream, pin.commit, new.commit, new.label, new.version)
    return targets


def resolve_targets(project: Project, store: UpstreamStore, specs: dict[str, str] | None, *,
                    resolved: dict[str, tuple[str, UpstreamPin]] | None = None
                    ) -> dict[str, Target]:
    """Targets per upstream: the locked pins, or what `--against` names (resolved into the
    store, or taken from `resolved`: bring_targets' answers)."""
    from patchforge.pins import ensure_pinned, pin_for_spec

    lock = project.lock
    targets: dict[str, Target] = {}
    for upstream in project.upstream_names():
        if upstream not in lock.upstreams and not project.patch_names(upstream):
            continue
        # An upstream with patches and no pin (upstream.lock lost in a merge, never committed)
        # cannot be judged: refused, never left out of an "all patches apply".
        pin = lock.pin(upstream)
        ensure_pinned(project, store, upstream, pin)
        if specs and upstream in specs:
            known = (resolved or {}).get(upstream)
            new_pin = known[1] if known is not None and known[0] == specs[upstream] else \
                pin_for_spec(project, store, project.config.upstream(upstream), specs[upstream])
            targets[upstream] = Target(upstream, pin.commit, new_pin.commit, new_pin.label,
                                       new_pin.version)
        else:
            targets[upstream] = Target(upstream, pin.commit, pin.commit, pin.label, pin.version)
    return targets
