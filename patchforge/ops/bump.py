"""`bump`: move one upstream of the stack to the newest (or a named) nightly, unattended.

The steps, each done by the piece that owns it elsewhere:
1. the candidate: with a SPEC, that one; otherwise the image repository's tags
   (`RegistryClient.list_tags`), kept when they are `nightly-<40 hex>`, ordered by the upstream's
   own history in the store (`UpstreamStore.newest_first`, ancestry, never the tag's spelling);
   the newest whose image resolves is recorded with its digest and creation time;
2. the judgement of the series against it: `ops.status.series_status`, the judge `status` uses,
   with the state of every pull request a fix names and "N commits ahead of, M behind" its merge
   commit;
3. the move: the rebase transaction (`rebase.engine.Rebase`), which writes patches, series, lock,
   overlays and ledger together or leaves a stopped, resumable rebase;
4. what a careful engineer checks next: the `Keeps:` invariants and the declared checks on the
   new overlays, and the overlays' pre-images inside the candidate image when it is reachable.

`bump` returns one document (the `--json` output, `formats/schemas/bump.schema.json`); the
Markdown for the stack repository's pull request is rendered from it (`ops.bump_report`). It
prints nothing and decides no exit code beyond saying whether a person is needed.
"""
from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from patchforge.errors import (ConflictStop, InProgressError, NetworkError, PatchforgeError,
                               StoreError, UsageError, gave_up_as)
from patchforge.model.record import field, record, replace
from patchforge.model.words import counted

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

BUMP_DOCUMENT_VERSION = 1
NIGHTLY_TAG = re.compile(r"^nightly-([0-9a-f]{40})\Z")
# How a landing names its pull request in the commit subject: GitHub's squash merge
# ("Fix the thing (#56503)") and its merge commit ("Merge pull request #56503 from ...").
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")
_MERGE_PR = re.compile(r"^Merge pull request #(\d+)\b")

OUTCOMES = {
    "clean": "applies unchanged",
    "offset": "moved (offset)",
    "merged": "moved (3-way merge)",
    "resolved": "resolved by hand",
    "dropped": "landed upstream",
    "skipped": "set aside",
    "conflict": "conflict: a person is needed",
}


@record
class Candidate:
    """The nightly (or SPEC) the stack moves to, with what the registry said about its image."""

    spec: str  # what the rebase records as the target
    tag: str | None
    commit: str | None  # the upstream commit the tag or SPEC names (before fetching)
    reference: str | None = None  # repo:tag of the image
    digest: str | None = None
    published: str | None = None  # the image config's `created`
    notes: list[str] = field(default_factory=list)
    # The revision upstream.lock pins for it ({"label", "commit"}): a git upstream's is
    # `commit`; a wheel upstream's is the import of the wheel the image names, no commit of
    # the upstream's history. Whether the stack is on the target is asked of this one.
    pin: dict | None = None

    def to_json(self) -> dict:
        return {"spec": self.spec, "tag": self.tag, "commit": self.commit,
                "reference": self.reference, "digest": self.digest,
                "published": self.published, "pin": self.pin}


def target_pin_commit(target: dict) -> str | None:
    """The lock revision a report's target was pinned as (its `pin`; a report kept before
    targets carried one names a git upstream's commit, which is its pin)."""
    pin = target.get("pin")
    if isinstance(pin, dict) and isinstance(pin.get("commit"), str):
        return pin["commit"]
    commit = target.get("commit")
    return commit if isinstance(commit, str) else None


@record
class Search:
    """How the candidate was found among the repository's tags (None with --to)."""

    repository: str
    listed: int = 0
    nightly: int = 0
    newer: list[str] = field(default_factory=list)  # newer than the pin, newest first
    older: int = 0  # nightlies the pin already includes
    skipped: list[dict] = field(default_factory=list)  # {"tag", "reason"}
    # Whether the stack's place in the history is known (`_known_base`): without it (a wheel
    # pinned by its version, no nightly image pinned) every nightly is a candidate, and none
    # is known to be newer than the stack.
    place_known: bool = True

    def to_json(self) -> dict:
        return {"repository": self.repository, "listed": self.listed, "nightly": self.nightly,
                "newer": self.newer, "not_newer": self.older, "skipped": self.skipped,
                "place_known": self.place_known}


# --- finding the candidate ----------------------------------------------------------------------

def image_repository(project: Project, given: str | None) -> str | None:
    """`--image REPO`, else the repository of the configured `image`; None when neither."""
    from patchforge.targets import image_repository_of

    if given:
        from patchforge.net.registry import parse_image_ref

        ref = parse_image_ref(given, need_tag=False)
        return f"{ref.registry}/{ref.repository}"
    if project.config.image:
        return image_repository_of(project.config.image)
    return None


def history_source(upstream) -> str:
    """The git repository whose history orders nightlies: a git upstream's own, or the
    `git-url` of a wheel or directory upstream."""
    url = upstream.url if upstream.kind == "git" else upstream.git_url
    if not url:
        raise UsageError(f"upstream {upstream.name} has no git history to order nightlies by",
                         hint=f"set `git-url` under [tool.patchforge.upstreams.{upstream.name}], "
                              "or name the target with --to SPEC")
    return url


def _fetch_tip(project: Project, store: UpstreamStore, upstream) -> tuple[str, str]:
    """(branch followed, its commit) of the upstream's history, fetched into the store."""
    from patchforge.pins import git_url_for
    from patchforge.store.gitsource import fetch_git_upstream

    url = git_url_for(project, history_source(upstream))
    follow = upstream.follow or store.remote_head_branch(url, what="asking for the default "
                                                                   "branch") or "main"
    try:
        return follow, fetch_git_upstream(store, upstream.name, url, follow,
                                          offline=project.offline)
    except StoreError as exc:
        if not upstream.follow:
            raise
        from patchforge.formats.config import follow_not_found
        raise follow_not_found(project.config_path, upstream.name, follow, exc) from None


def _label_commit(upstream, info) -> str | None:
    from patchforge.targets import label_keys_for

    for key in label_keys_for(upstream.name, upstream.image_label):
        # Hex is hex in either case: a label written in upper case still names a commit, and
        # reading it as no commit would skip the check that the image is the tag's commit.
        value = (info.labels or {}).get(key, "").strip().lower()
        if re.fullmatch(r"[0-9a-f]{7,40}", value):
            return value
    return None


def _describe_image(candidate: Candidate, info) -> None:
    candidate.digest = info.digest
    candidate.published = info.created


def find_newest(project: Project, store: UpstreamStore, upstream, pin, registry,
                repository: str) -> tuple[ Candidate | None, Search]:
    """The newest nightly of `repository` on the upstream's history, newer than `pin`."""
    search = Search(repository)
    tags = registry.list_tags(repository)
    search.listed = len(tags)
    nightlies: dict[str, str] = {}  # commit -> tag (two tags naming one commit: the first)
    for tag in tags:
        match = NIGHTLY_TAG.match(tag)
        if match:
            search.nightly += 1
            nightlies.setdefault(match.group(1), tag)
    if not nightlies:
        return None, search
    follow, tip = _fetch_tip(project, store, upstream)
    after = _known_base(store, project, upstream, pin, tip)
    search.place_known = after is not None
    present = [c for c in nightlies if store.has_object(c)]
    # Two walks of the history, however many nightlies: those on the branch, then those the
    # pin does not have yet. (A merge-base per tag walks the history once per tag; with a
    # nightly a day that is hundreds of walks: docs/performance.md.)
    on_branch = store.newest_first(present, tip)
    ordered = store.newest_first(on_branch, tip, after=after) if after else on_branch
    search.older = len(on_branch) - len(ordered)
    reachable = set(on_branch)
    for commit, tag in nightlies.items():
        if commit not in reachable:
            search.skipped.append({"tag": tag, "reason": f"its commit {commit[:12]} is not in "
                                                         f"the upstream's {follow}"})
    search.newer = [nightlies[c] for c in ordered]
    for commit in ordered:
        tag = nightlies[commit]
        candidate = Candidate(spec=tag, tag=tag, commit=commit,
                              reference=f"{repository}:{tag}")
        try:
            info = registry.resolve_image(candidate.reference)
        except PatchforgeError as exc:
            if not getattr(exc, "about_image", False):
                # No answer, a refusal (an expired token) or a corrupted body is not "no
                # image": skipping it would make an older nightly the target, or say the
                # stack is up to date while this one waits, every night.
                raise gave_up_as(NetworkError(f"the nightly {tag}, newer than upstream.lock, "
                                              f"could not be looked up: {exc.message}",
                                              hint=f"nothing was moved; "
                                                   f"{_registry_advice(exc)}"),
                                 exc) from None
            search.skipped.append({"tag": tag, "reason": f"its image does not resolve: "
                                                         f"{exc.message}"})
            continue
        said = _label_commit(upstream, info)
        if said and not commit.startswith(said):
            search.skipped.append({"tag": tag, "reason": f"its image labels name commit "
                                                         f"{said}, not {commit[:12]}"})
            continue
        _describe_image(candidate, info)
        return candidate, search
    return None, search


def no_nightly_tags(search: Search, *, given: bool) -> UsageError:
    """The refusal of a repository that lists no `nightly-<40 hex>` tag: it names the
    repository, what it lists and the tag form looked for."""
    form = "nightly-<40 hex> (the upstream commit's full id), the form bump looks for"
    what = (f"it lists no tags; nightlies are tags of the form {form}" if not search.listed else
            f"none of its {search.listed} tags is of the form {form}" if search.listed > 1 else
            f"its one tag is not of the form {form}")
    source = "--image REPO" if given else "the repository of the configured `image`"
    return UsageError(f"no nightly in {search.repository}: {what}; nothing was moved",
                      hint=f"check that {source} names the repository the nightly images are "
                           "pushed to; for nightlies tagged otherwise, name the target with "
                           "--to SPEC (an image reference REPO:TAG, a commit or a version)")


def _registry_advice(exc: PatchforgeError) -> str:
    """What to do about an image the registry did not resolve for its own reasons."""
    if getattr(exc, "gave_up", False):
        return "run bump again when the registry answers"
    if getattr(exc, "status", None) in (401, 403):
        return ("check the credentials for the registry (`docker login`, or "
                "PATCHFORGE_REGISTRY_TOKEN with PATCHFORGE_REGISTRY_HOST) and run bump again")
    return ("the registry (or a proxy before it) did not serve the image it names; run bump "
            "again, or name the target with --to SPEC")


def _known_base(store: UpstreamStore, project: Project, upstream, pin, tip: str) -> str | None:
    """The commit of the upstream's history the stack is on: the pin itself for a git upstream,
    else the commit a nightly image pin names; None when unknown (every nightly is a candidate)."""
    known = pin.commit if pin.kind == "git" else None
    image = project.lock.image
    if known is None and image is not None and image.tag:
        match = NIGHTLY_TAG.match(image.tag)
        known = match.group(1) if match else None
    if known and store.has_object(known) and store.is_ancestor(known, tip):
        return known
    return None


def named_candidate(project: Project, upstream, spec: str, registry,
                    repository: str | None) -> Candidate:
    """The candidate `--to SPEC` names: a nightly tag (its image looked up in `repository`), an
    image reference, or any other SPEC (no image then)."""
    from patchforge.net.registry import parse_image_ref
    from patchforge.targets import SpecKind, classify_spec

    kind = classify_spec(spec)
    candidate = Candidate(spec=spec, tag=None, commit=None)
    if kind is SpecKind.nightly:
        candidate.tag = spec
        nightly = NIGHTLY_TAG.match(spec)
        assert nightly is not None, "a nightly SPEC is one that matches"
        candidate.commit = nightly.group(1)
        candidate.reference = f"{repository}:{spec}" if repository else None
    elif kind is SpecKind.image:
        ref = parse_image_ref(spec)
        candidate.tag = ref.tag
        candidate.reference = spec
        match = NIGHTLY_TAG.match(ref.tag or "")
        candidate.commit = match.group(1) if match else None
    elif kind is SpecKind.commit and len(spec) == 40:
        candidate.commit = spec
    if candidate.reference and registry is None:
        candidate.notes.append(f"the image {candidate.reference} was not looked up (offline): "
                               "no digest or publication time")
    if candidate.reference and registry is not None:
        try:
            info = registry.resolve_image(candidate.reference)
        except PatchforgeError as exc:
            # The move pins the image by digest (and verifies against it): one the registry
            # did not resolve would be pinned by its tag alone, so nothing is moved.
            again = _registry_advice(exc) if not getattr(exc, "about_image", False) else \
                "check the tag and --image"
            # Without the image: the commit as the SPEC (no image is looked up or pinned);
            # a wheel upstream's is the version of the wheel, which only the image's labels
            # would have named (a commit is no SPEC of a wheel upstream).
            # --offline is no way on here: the commit was not fetched.
            if upstream.kind == "wheel":
                without = (f"`patchforge bump {shlex.quote(upstream.name)} --to VERSION`, "
                           f"VERSION the version of {upstream.package} the nightly holds")
            elif candidate.commit and len(candidate.commit) == 40:
                without = f"`patchforge bump {shlex.quote(upstream.name)} --to {candidate.commit}`"
            else:
                without = "--to the upstream's commit"
            dropped = (f": the pin of {project.lock.image.reference} is dropped"
                       if project.lock.image is not None else "")
            raise gave_up_as(NetworkError(f"the image {candidate.reference} could not be looked "
                                          f"up: {exc.message}",
                                          hint=f"nothing was moved; {again}, or move without "
                                               f"the image: {without} (no image is pinned "
                                               f"then{dropped})"), exc) from None
        else:
            said = _label_commit(upstream, info)
            if candidate.commit is None:
                candidate.commit = said
            elif said and not candidate.commit.startswith(said):
                raise UsageError(f"{candidate.reference}: its image labels name commit {said}, "
                                 f"not {candidate.commit[:12]}")
            _describe_image(candidate, info)
    return candidate


def pin_for_candidate(project: Project, store: UpstreamStore, upstream, candidate: Candidate):
    """The lock pin of the candidate. A git upstream's nightly is its commit, fetched, with the
    image pinned by digest; anything else goes through the SPEC resolution `rebase` uses."""
    from patchforge.model.lock import ImagePin, UpstreamPin
    from patchforge.pins import git_url_for, pin_for_spec, refuse_unwritable_label
    from patchforge.store.gitsource import fetch_git_upstream

    if upstream.kind == "git" and candidate.tag and candidate.commit \
            and len(candidate.commit) == 40:
        refuse_unwritable_label(upstream.name, candidate.tag)
        commit = fetch_git_upstream(store, upstream.name, git_url_for(project, upstream.url),
                                    candidate.commit, offline=project.offline)
        image = ImagePin(reference=candidate.reference, tag=candidate.tag,
                         digest=candidate.digest) if candidate.reference else None
        return UpstreamPin(kind="git", commit=commit, tree=store.tree_id(commit),
                           label=candidate.tag, source={"url": upstream.url}, version=None,
                           image=image)
    return pin_for_spec(project, store, upstream, candidate.reference or candidate.spec)


# --- judging, moving, checking ------------------------------------------------------------------

def _pr_label(url: str) -> str:
    from patchforge.net.forge import parse_pr_url

    try:
        ref = parse_pr_url(url)
    except UsageError:
        return url
    return f"{ref.repo}#{ref.number}"


def pull_request_sentence(info: dict, target_label: str) -> str:
    """A pull request's state, read as a person writes it: merged as X; the target is N
    commits ahead of, and M behind, its merge commit, so the change is (not) included."""
    label = _pr_label(info.get("url", "?"))
    if info.get("error") and "merged" not in info:
        return f"{label}: no answer from the forge ({info['error']})"
    if not info.get("merged"):
        return f"{label} is {info.get('state', 'not merged')}, not merged"
    merge = (info.get("merge_commit") or "")[:12]
    if info.get("included") is None:
        return f"{label} merged as {merge}; whether {target_label} includes it is unknown"
    verdict = "so the change is included" if info["included"] else \
        "so the change is not included yet"
    return (f"{label} merged as {merge}; {target_label} is "
            f"{counted(info['ahead_by'], 'commit')} ahead of, and {info['behind_by']} behind, its merge commit, {verdict}")


def landing_pull_request(store: UpstreamStore, upstream, commit: str,
                         forwarded: dict | None) -> str | None:
    """The pull request a landing came through: the fix's own PR when it merged and the target
    includes its merge commit, else the one the commit's subject names (squash or merge)."""
    if forwarded and forwarded.get("merged") and (forwarded.get("included")
                                                  or forwarded.get("merge_commit") == commit):
        return forwarded["url"]
    try:
        subject = store.commit_message(commit).split(b"\n", 1)[0].decode("utf-8", "replace")
    except PatchforgeError:
        return None
    match = _SQUASH_PR.search(subject) or _MERGE_PR.match(subject)
    if not match:
        return None
    number = match.group(1)
    if upstream.forge_repo:
        host = "github.com"
        if forwarded and forwarded.get("url", "").startswith("https://"):
            host = forwarded["url"].split("/")[2]
        return f"https://{host}/{upstream.forge_repo}/pull/{number}"
    return f"#{number}"


def _fix_entry(store: UpstreamStore, upstream, status, result: dict | None,
               target_label: str) -> dict:
    """One fix's outcome with its evidence: the judge's, the rebase's, its pull request's."""
    action: str = result["action"] if result else ""
    evidence = list(status.evidence) if status is not None else []
    if result:
        for line in [result.get("detail") or "", *result.get("evidence", [])]:
            if line and line not in evidence:
                evidence.append(line)
    forwarded = status.forwarded if status is not None else None
    landed = (result or {}).get("landed_in") or (status.landed_in if status else None)
    through = landing_pull_request(store, upstream, landed, forwarded) if landed else None
    entry = {
        "name": (result or {}).get("name") or status.name,
        "state": status.state if status is not None else None,
        "outcome": action or ("judged" if status is not None else "unknown"),
        "summary": OUTCOMES.get(action, status.state if status is not None else ""),
        "landed_in": landed,
        "landed_through": through,
        "destination": (result or {}).get("destination"),
        "pull_request": None,
        "drop_when": status.drop_when if status is not None else None,
        "evidence": evidence,
        "needs_person": action == "conflict",
    }
    if forwarded:
        entry["pull_request"] = {**{k: forwarded.get(k) for k in (
            "url", "state", "merged", "merge_commit", "included", "ahead_by", "behind_by",
            "error")}, "sentence": pull_request_sentence(forwarded, target_label)}
    drop = entry["drop_when"]
    if drop and drop.get("true") and entry["destination"] in (None, "series") \
            and action != "dropped":
        entry["needs_person"] = True
        entry["evidence"].append(f"Drop-When {drop['condition']} holds on the target, but the "
                                 "fix is still in the series: remove it once verified")
    return entry


def _checks(project: Project, store: UpstreamStore) -> dict:
    """Keeps invariants and declared checks on the new overlays (built from the written state)."""
    from patchforge.checks import run_checks
    from patchforge.invariants import check_overlay_invariants
    from patchforge.overlay import build_overlays

    overlays = build_overlays(project, store)
    violations = check_overlay_invariants(project, overlays, store=store)
    results = run_checks(project, store, overlays)
    return {"ran": True, "reason": None,
            "invariants": [v.to_json() for v in violations],
            "results": [r.to_json() for r in results],
            "ok": not violations and all(r.ok for r in results)}


def _not_run(reason: str) -> dict:
    return {"ran": False, "reason": reason, "invariants": [], "results": [], "ok": None}


def verify_against_image(project: Project, reference: str, registry) -> dict:
    """The new overlays' pre-images inside the candidate image (`ops.deploy.verify_image`:
    its layers read through the registry), as the report's verification section. An image the
    registry cannot serve is "unreachable", not a failure: the move itself is still sound."""
    from patchforge.ops.deploy import verify_image

    if registry is None:
        return {"status": "unreachable", "reference": reference, "files": [],
                "detail": "no registry (offline)"}
    try:
        check = verify_image(project, reference, registry=registry)
    except NetworkError as exc:
        return {"status": "unreachable", "reference": reference, "files": [],
                "detail": exc.message}
    except PatchforgeError as exc:  # e.g. an upstream without install-root, an empty image
        return {"status": "unavailable", "reference": reference, "files": [],
                "detail": exc.message}
    files = [{"path": f.target, "status": f.state, "detail": f.detail} for f in check.files]
    # The files of the fixes the move dropped as landed are read in the image too: the series
    # was judged on the upstream's revision (a wheel upstream's: the wheel the label names),
    # which says nothing of the image's own files.
    overlaid = [f for f in check.files if not f.landed]
    landed = [f for f in check.files if f.landed]
    bad = [f for f in overlaid if f.state != "ok"]
    lacking = [f for f in landed if f.state != "ok"]
    detail = (f"{counted(len(overlaid), 'overlaid file')} checked in {check.layers_read} of "
              f"{counted(check.layers_total, 'layer')}: " + (
                  "every pre-image matches" if not bad else
                  f"{len(bad)} {'does' if len(bad) == 1 else 'do'} not match the pre-image the "
                  "overlays were made for"))
    if landed:
        detail += (f"; {counted(len(landed), 'file')} of fixes dropped as landed upstream: " + (
            "each holds its fix" if not lacking else
            f"{len(lacking)} without the fix, which no overlay carries ("
            + ", ".join(f"{f.target}: {', '.join(f.landed)}" for f in lacking) + ")"))
    bad += lacking
    notes = [n for n in check.notes if n.startswith("NOT CHECKED")]
    if notes:
        detail += "; " + "; ".join(notes)
    return {"status": "failed" if bad else "passed", "reference": check.resolved,
            "files": files, "detail": detail}


def _own_spec(project: Project, name: str, spec: str) -> str:
    """`--to` read as `rebase --to` reads it (targets.own_spec): `NAME=SPEC` is upstream
    NAME's SPEC, the one being bumped or refused."""
    from patchforge.targets import own_spec

    return own_spec(spec, name, project.upstream_names(),
                    refusal="bump moves {name}, and --to {spec!r} names {other}",
                    again="`patchforge bump {other} --to {rest}`")


def refuse_rebase_in_progress(project: Project) -> None:
    """InProgressError while a rebase journal stands: a stopped rebase is the project's state
    until it is finished, and a bump would judge and report on a series that is half moved.
    Asked before anything else of the series (`bump` asks it before the patch files no series
    lists): a rebase cut short in its write-out leaves a landed fix's file unlisted beside the
    new series, and "list it again" there made `rebase --continue` refuse its series."""
    from patchforge.rebase.journal import Journal
    from patchforge.state import cut_short_write_out, rebase_in_progress_ways_on

    if not Journal(project.state_dir).exists():
        return
    if cut_short_write_out(project) is not None:
        # (`--skip` is refused there: nothing is left to skip.)
        raise InProgressError("a rebase is in progress (cut short while writing out its "
                              "result)",
                              hint="finish it first: `patchforge rebase --continue` finishes "
                                   "it, `patchforge rebase --abort` undoes it")
    # Stopped on a patch, `--skip` is a way on too; cut short in its walk it is refused
    # ("nothing to skip").
    raise InProgressError("a rebase is in progress",
                          hint=f"finish it first: {rebase_in_progress_ways_on(project)}")


def bump(project: Project, store: UpstreamStore, upstream_name: str | None, *,
         spec: str | None = None, image: str | None = None, dry_run: bool = False, registry=None,
         forge=None, on_patch=None, proposing: bool = False, before_move=None) -> dict:
    """Find the candidate, judge, rebase, check, verify; the report document.

    `before_move` is called, just before the rebase starts (not in a dry run), with the
    report of the move cut short in its rebase (outcome "stopped"): kept then, it is the
    report a run cut there (Ctrl-C, a kill) leaves, so that once a person finishes the
    rebase the next bump finds the move and proposes it as the move it was.

    `proposing`: the run opens the pull request (--open-pr): a move it finds finished already
    (finished_move) is proposed as the move, also from the report a run without --open-pr
    kept of it.

    `registry` lists tags and resolves images (None: no registry, e.g. --offline); `forge`
    answers pull request states. A conflict leaves the rebase stopped (resumable with
    `rebase --continue`) and the document says so; it is not raised.
    """
    from patchforge.judge import Target
    from patchforge.ops.status import series_status
    from patchforge.rebase.engine import Rebase

    refuse_rebase_in_progress(project)
    name = _which_upstream(project, upstream_name)
    upstream = project.config.upstream(name)
    old = project.lock.pin(name)
    repository = image_repository(project, image)
    search = None
    notes: list[str] = []
    candidate: Candidate | None
    if spec is not None:
        candidate = named_candidate(project, upstream, _own_spec(project, name, spec), registry,
                                    repository)
    else:
        if repository is None:
            # A stack pinned through an image (`upstream add --at REPO:TAG`) was told to give
            # a repository as if it had none: its own is the first way on.
            pinned = project.lock.image
            from patchforge.targets import image_repository_of

            raise UsageError("no image repository to look for nightlies in",
                             hint=(f"upstream.lock pins the image {pinned.reference}: "
                                   f"`--image {image_repository_of(pinned.reference)}` looks "
                                   "for nightlies in its repository; or " if pinned else "")
                             + "give --image REPO, set `image` in the configuration, "
                               "or name the target with --to SPEC")
        if registry is None:
            raise UsageError("finding the newest nightly needs the registry",
                             hint="run without --offline, or name the target with --to SPEC")
        # Before the registry is asked: without the history, whatever it lists cannot be
        # ordered (and a registry out of reach would hide what is missing).
        history_source(upstream)
        candidate, search = find_newest(project, store, upstream, old, registry, repository)
        if candidate is None:
            # A move a bump began (stopped on a conflict, or cut short in its rebase) that a
            # person finished: the pin is its target now, so no nightly is newer; it is the
            # move, reported and proposed as such (finished_move below).
            candidate = _finished_target(project, name, old.commit)
        if candidate is None and search.nightly == 0:
            # Not "on the newest nightly already": no nightly was found at all (a mistyped
            # repository, or nightlies tagged otherwise), and a scheduled bump would stay
            # green every night while nothing is ever judged against a new upstream.
            raise no_nightly_tags(search, given=image is not None)
        if candidate is None:
            return _document(project, name, old, None, search, dry_run=dry_run,
                             outcome="up-to-date", fixes=[], rebase=None, checks=_not_run(
                                 "no newer nightly"), verification=None, notes=notes)
    notes.extend(candidate.notes)
    new = pin_for_candidate(project, store, upstream, candidate)
    candidate.commit = new.commit if new.kind == "git" else candidate.commit
    candidate.pin = {"label": new.label, "commit": new.commit}
    target = Target(name, old.commit, new.commit, new.label, new.version)
    label = candidate.tag or new.label
    statuses = {s.name: s for s in series_status(project, store, {name: target}, forge=forge,
                                                 upstreams=[name])}
    rebase_doc = None
    stopped = None
    finished = finished_move(project, name, new.commit, proposing) \
        if new.commit == old.commit else None
    if finished is not None:
        # The move this bump stopped in, finished by a person (`rebase --continue`/`--skip`):
        # reported as the move it was, from the pin it left, with what happened to every fix,
        # not as "nothing to move" over a pull request that moves the lock and drops fixes.
        old_pin, rebase_doc = finished
        old = replace(old, label=old_pin["label"], commit=old_pin["commit"])
        outcome = "moved"
    elif new.commit == old.commit:
        outcome = "up-to-date"
    else:
        if before_move is not None and not dry_run:
            before_move(_document(
                project, name, old, candidate, search, dry_run=False, outcome="stopped",
                fixes=[_fix_entry(store, upstream, status, None, label)
                       for status in statuses.values()],
                rebase={}, checks=_not_run("the rebase was cut short: a person is needed first"),
                verification=None, notes=notes, stopped=CUT_SHORT))
        engine = Rebase(project, store, on_patch=on_patch)
        try:
            rebase_doc = engine.start({name: candidate.spec}, dry_run=dry_run, pins={name: new})
            outcome = "moved" if not dry_run else "planned"
        except ConflictStop as stop:
            rebase_doc = engine.stop_document(stop.message)
            stopped = {"message": stop.message, "hint": stop.hint}
            outcome = "stopped"
    unpinned = (rebase_doc or {}).get("image_unpinned")
    if rebase_doc is not None and unpinned:
        from patchforge.model.lock import image_unpinned_text

        # A move to a commit or a release (--to, or the hint when tonight's image cannot be
        # looked up) leaves the image the lock pinned: the fragment's `image:` goes with it,
        # and the pull request said only "moved cleanly".
        notes.append(image_unpinned_text(unpinned["reference"],
                                         written=not rebase_doc.get("dry_run")))
    results = {r["name"]: r for r in (rebase_doc or {}).get("patches", [])}
    at = (rebase_doc or {}).get("stopped") or {}
    if stopped and at.get("name") and at.get("upstream") == name:
        # The fix the rebase stopped on has no result of its own (it is not moved yet), and
        # the judge's state of it is the walk's that goes past stops: the report names it as
        # the conflict a person resolves, with the stop's evidence, as the dry run does.
        results[at["name"]] = {**results.get(at["name"], {}), "name": at["name"],
                               "action": "conflict", "evidence": at.get("evidence") or [],
                               "detail": "" if at.get("evidence") else at.get("message")}
    fixes = [_fix_entry(store, upstream, statuses.get(n), results.get(n), label)
             for n in dict.fromkeys([*statuses, *results])]
    if stopped:
        checks, verification = _not_run("the rebase stopped: a person is needed first"), None
    elif dry_run:
        checks, verification = _not_run("dry run: nothing was written"), None
    else:
        from patchforge.project import Project

        written = Project.discover(project.root, offline=project.offline)
        checks = _checks(written, store)
        reference = _pinned_reference(candidate)
        verification = verify_against_image(written, reference, registry) if reference else {
            "status": "unavailable", "reference": None, "files": [],
            "detail": "no image to verify against"}
    return _document(project, name, old, candidate, search, dry_run=dry_run, outcome=outcome,
                     fixes=fixes, rebase=rebase_doc, checks=checks, verification=verification,
                     notes=notes, stopped=stopped)


# The stop a bump cut short in its rebase reports (its `before_move` report).
CUT_SHORT = {"message": "the bump was cut short in its rebase (Ctrl-C, SIGTERM or a kill), "
                        "which is left in progress",
             "hint": "`patchforge rebase --continue` finishes it (`--abort` goes back)"}


def _finished_target(project: Project, name: str, commit: str) -> Candidate | None:
    """The candidate of the stopped move finished_move finds finished at `commit` (the pin),
    as the kept report names it; None when there is none. (The kept report of a move made
    whole whose pull request was never opened is the CLI's to propose, `_unopened_bump`.)"""
    from patchforge.fsutil import parse_json

    if finished_move(project, name, commit) is None:
        return None
    try:
        target = parse_json((project.state_dir / "bump" / "report.json").read_bytes())["target"]
        return Candidate(spec=str(target["spec"]), tag=target.get("tag"),
                         commit=target.get("commit") or commit,
                         reference=target.get("reference"), digest=target.get("digest"),
                         published=target.get("published"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def finished_move(project: Project, name: str, commit: str,
                  proposing: bool = False) -> tuple[dict, dict] | None:
    """(the pin the move left, the finished rebase's summary) when the last bump of `name`
    stopped in its rebase to `commit` and that rebase has since been finished by hand: the
    kept report (.patchforge/bump/report.json) says "stopped" on the way to `commit` (or,
    `proposing`, is the move's own report, kept by a run without --open-pr, its pull request
    not opened yet: a run that does not propose it reports it once), and the last rebase
    (.patchforge/last-rebase.json) moved `name` from that
    report's pin to `commit` and wrote the series. None otherwise (nothing kept, another
    move, a pull request already opened for it)."""
    from patchforge.fsutil import parse_json

    try:
        kept = parse_json((project.state_dir / "bump" / "report.json").read_bytes())
        last = parse_json((project.state_dir / "last-rebase.json").read_bytes())
        moved = last["upstreams"][name]
        left = kept["from"]
        # The stopped bump's report, or the report of the finished move itself that a run
        # without --open-pr kept over it (its pull request not opened yet).
        proposed = proposing and kept["outcome"] == "moved" and \
            not (kept.get("pull_request") or {}).get("url")
        if kept["outcome"] != "stopped" and not proposed or kept["upstream"] != name \
                or target_pin_commit(kept["target"]) != commit:
            return None
        if not last.get("written") or last.get("stopped") or moved["to_commit"] != commit \
                or moved["from_commit"] != left["commit"]:
            return None
        return {"label": str(left["label"]), "commit": str(left["commit"])}, last
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _pinned_reference(candidate: Candidate) -> str | None:
    if not candidate.reference:
        return None
    base = candidate.reference.split("@", 1)[0]
    return f"{base}@{candidate.digest}" if candidate.digest else base


def _which_upstream(project: Project, name: str | None) -> str:
    names = project.upstream_names()
    if name is not None:
        project.config.upstream(name)  # a UsageError naming the known ones
        return name
    if len(names) != 1:
        raise UsageError(f"name the upstream to bump ({', '.join(names) or 'none configured'})",
                         hint="patchforge bump UPSTREAM")
    return names[0]


def _document(project: Project, name, old, candidate, search, *, dry_run, outcome, fixes, rebase,
              checks, verification, notes, stopped=None) -> dict:
    rebase_part = None
    if rebase is not None:
        rebase_part = {"counts": rebase.get("counts", {}), "written": bool(rebase.get("written")),
                       "stopped": stopped, "range_diff": rebase.get("range_diff") or "",
                       "image_unpinned": rebase.get("image_unpinned")}
    # A fix kept under upstreamed/ whose landing the new nightly took back is in no overlay:
    # the bump's report (and its pull request) is where a person looks, so it says so there.
    taken_back = [f"{'reverted' if g['kind'] == 'reverted' else 'taken out'} upstream (needs "
                  f"attention): {g['message']}"
                  for g in [*(rebase or {}).get("reverted", []),
                            *(rebase or {}).get("gone_upstream", [])]]
    from patchforge.state import skipped_fixes, skipped_notes

    # A fix a rebase set aside under skipped/ (a `--skip` at a stop, this move's or an
    # earlier one's) is in none of the overlays either: `verify` and `status` exit 1 for it,
    # and the report said nothing, the pull request reading as a clean move.
    set_aside = [f"set aside (needs attention, in none of the overlays): {note}"
                 for _, note in skipped_notes(project, skipped_fixes(project))]
    notes = [*notes, *taken_back, *set_aside]
    needs_person = bool(stopped) or any(f["needs_person"] for f in fixes) or (
        checks.get("ok") is False) or bool(verification and verification.get("status")
                                           == "failed") or bool(taken_back) or bool(set_aside)
    return {
        "schema_version": BUMP_DOCUMENT_VERSION,
        "upstream": name,
        "dry_run": dry_run,
        "outcome": outcome,
        "needs_person": needs_person,
        "from": {"label": old.label, "commit": old.commit},
        "target": candidate.to_json() if candidate is not None else None,
        "search": search.to_json() if search is not None else None,
        "fixes": fixes,
        "rebase": rebase_part,
        "checks": checks,
        "verification": verification,
        "notes": notes,
        "pull_request": None,
    }
