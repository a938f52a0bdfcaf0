"""`status`: for every patch, does it still apply to the target, and if not, did it land?

The target defaults to the locked revisions ("is my series healthy"); `--against SPEC` names
another. Patches are judged in series order on the target with the earlier, still-needed patches
applied, exactly as a rebase would meet them. Nothing is checked out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from patchforge.apply.hunks import apply_file_patch
from patchforge.detect import assess_patch
from patchforge.errors import NetworkError, PatchforgeError, UsageError
from patchforge.ops.common import Background

ATTENTION_STATES = {"fuzz", "conflict", "upstreamed", "partial", "obsolete", "unsure"}
_SUBMITTED = re.compile(r"^Submitted\s*\[(?P<url>[^\]]+)\]", re.I)


@dataclass
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
    forwarded: dict | None = None
    drop_when: dict | None = None
    attention: bool = False
    verdict: object = field(default=None, repr=False)

    def to_json(self) -> dict:
        return {"upstream": self.upstream, "name": self.name, "state": self.state,
                "confidence": self.confidence, "hunks": {"total": self.hunks_total,
                                                         "landed": self.hunks_landed},
                "evidence": self.evidence, "files": self.files, "landed_in": self.landed_in,
                "forwarded": self.forwarded, "drop_when": self.drop_when,
                "needs_attention": self.attention}


@dataclass
class Target:
    """Where an upstream is judged: the base pin and the target commit (and its version)."""

    upstream: str
    base_commit: str
    commit: str
    label: str
    version: str | None


class SeriesJudge:
    """Walks one upstream's series over a target, keeping the target's files with the earlier
    still-needed patches applied (`current`), so each patch meets what a rebase would give it."""

    def __init__(self, store, target: Target, *, read_commit: str | None = None) -> None:
        self.store = store
        self.target = target
        # Where files not yet touched are read from: the target itself, or (when a rebase
        # resumes) a commit holding the target plus the series rebased so far.
        self.read_commit = read_commit or target.commit
        self.current: dict[str, bytes | None] = {}
        self._read: dict[str, bytes | None] = {}

    def prefetch(self, patches) -> None:
        """Read every file the patches touch, on the base and where the judge reads, in one
        round each (the store keeps them): one pipelined cat-file exchange instead of one per
        file and patch."""
        paths = sorted({p for _, patch in patches for p in patch.paths})
        if paths:
            self.store.prefetch([(self.target.base_commit, paths), (self.read_commit, paths)])
            self.store.read_blobs(self.target.base_commit, paths)
            self.store.read_blobs(self.read_commit, paths)

    def read_current(self, path: str) -> bytes | None:
        if path in self.current:
            return self.current[path]
        if path not in self._read:
            self._read[path] = self.store.read_blob(self.read_commit, path)
        return self._read[path]

    def exists(self, path: str) -> bool:
        return self.read_current(path) is not None

    def find_rename(self, path: str) -> str | None:
        if self.target.base_commit == self.target.commit:
            return None
        found = self.store.renames(self.target.base_commit, self.target.commit, [path])
        return found.get(path)

    def assess(self, name: str, patch):
        """The verdict for one patch on the current state, without applying it."""
        base = self.target.base_commit
        return assess_patch(
            name, patch,
            read_base=lambda path: self.store.read_blob(base, path),
            read_current=self.read_current, exists_in_target=self.exists,
            find_rename=self.find_rename)

    def judge(self, name: str, patch):
        """Assess, then apply what applies so the next patch meets the same state a rebase
        would give it."""
        verdict = self.assess(name, patch)
        if verdict.state in ("applies", "offset", "fuzz", "unsure", "partial"):
            self.advance(patch, verdict)
        return verdict

    def advance(self, patch, verdict) -> None:
        """Apply the patch's applicable files to `current` (renamed paths followed)."""
        from dataclasses import replace
        for fp, fv in zip(patch.file_patches, verdict.files):
            if fv.target_path is None or fv.applied is None:
                continue
            moved = fv.target_path
            if moved != fv.path:
                fp = replace(fp, old_path=moved, new_path=moved)
            application = apply_file_patch(self.read_current(moved) if not fp.is_new else None,
                                           fp, max_fuzz=2)
            if application.ok:
                self.current[moved if fp.new_path is not None else fp.old_path] = \
                    application.content


def _history_index(store, target: Target, paths: list[str]) -> "HistoryIndex | None":
    """HistoryIndex of `paths` with their diffs read, or None without history."""
    if not _history(store, target):
        return None
    index = HistoryIndex(store, target, paths)
    index.read_diffs()
    return index


def _history(store, target: Target) -> bool:
    """Whether the store has the upstream's history from base to target (git upstreams; wheel
    and directory imports are root commits with none)."""
    return target.base_commit != target.commit and store.is_ancestor(target.base_commit,
                                                                     target.commit)


def _patch_paths(verdict) -> list[str]:
    return sorted({f.path for f in verdict.files}
                  | {f.target_path for f in verdict.files if f.target_path})


def landed_in(store, target: Target, patch, verdict, *,
              commits: list[str] | None = None) -> str | None:
    """The upstream commit that introduced the change: the first commit touching the patch's
    files (between base and target) at which every hunk the target has is already there (for a
    partial landing: as many hunks as in the target). Binary search over only those commits
    keeps it fast on long histories; each probe judges the patch alone on that commit."""
    if verdict.hunks_landed == 0 or not _history(store, target):
        return None
    if commits is None:
        commits = store.commits_touching(target.base_commit, target.commit,
                                         _patch_paths(verdict))
    if not commits:
        return None
    want_all = verdict.state == "upstreamed"

    def landed_at(commit: str) -> bool:
        probe = SeriesJudge(store, Target(target.upstream, target.base_commit, commit,
                                          commit, None))
        found = probe.assess("probe", patch)
        if want_all:
            return found.state == "upstreamed"
        return found.hunks_landed >= verdict.hunks_landed

    lo, hi = 0, len(commits) - 1
    if not landed_at(commits[hi]):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if landed_at(commits[mid]):
            hi = mid
        else:
            lo = mid + 1
    return commits[lo]


class HistoryIndex:
    """The upstream history between a base and a target, read once per series: which commits
    touch which files (one `git log --name-only`), and the patch-ids of those commits limited to
    any set of files (one `git log -p`, one `git patch-id`). Status asks both for every landed
    patch; asked per patch, they were three git processes each."""

    def __init__(self, store, target: Target, paths: list[str]) -> None:
        self.store = store
        self.target = target
        self.log = store.touching_log(target.base_commit, target.commit, paths) if paths else []
        self.paths = paths
        self._chunks: dict[str, dict[str, bytes]] | None = None

    def commits_touching(self, paths: list[str]) -> list[str]:
        wanted = set(paths)
        return [commit for commit, changed in self.log if wanted.intersection(changed)]

    def read_diffs(self) -> None:
        """Read the commits' diffs now (patch_id_matches needs them)."""
        self._file_chunks()

    def _file_chunks(self) -> dict[str, dict[bytes, bytes]]:
        """commit -> {its `diff --git` line: that file's diff}, from one `git log -p`."""
        if self._chunks is None:
            chunks: dict[str, dict[bytes, list[bytes]]] = {}
            if self.log:
                text = self.store.log_patches(self.target.base_commit, self.target.commit,
                                              self.paths)
                files: dict[bytes, list[bytes]] = {}
                header = None
                for line in text.splitlines(keepends=True):
                    if line.startswith(b"commit ") and len(line.strip()) == 47:
                        files = chunks.setdefault(line.split()[1].decode(), {})
                        header = None
                    elif line.startswith(b"diff --git "):
                        header = line.rstrip(b"\n")
                        files[header] = [line]
                    elif header is not None:
                        files[header].append(line)
            self._chunks = {c: {h: b"".join(lines) for h, lines in f.items()}
                            for c, f in chunks.items()}
        return self._chunks

    def patch_id_matches(self, requests: list[tuple[object, bytes, list[str]]]) -> dict:
        """For each (key, the patch's diff, its paths): the commits whose change to those paths
        has the patch's `git patch-id --stable`, in one patch-id run for the whole series."""
        from patchforge.store.gitstore import diff_header

        chunks = self._file_chunks()
        feed: list[bytes] = []
        owners: dict[str, tuple[object, str | None]] = {}  # fake id -> (request key, commit)
        for key, diff, paths in requests:
            fake = f"{len(owners):040x}"
            owners[fake] = (key, None)
            feed.append(f"commit {fake}\n\n".encode() + diff)
            headers = [diff_header(p) for p in paths]
            for commit in self.commits_touching(paths):
                body = b"".join(chunks.get(commit, {}).get(h, b"") for h in headers)
                if body:
                    fake = f"{len(owners):040x}"
                    owners[fake] = (key, commit)
                    feed.append(f"commit {fake}\n\n".encode() + body)
        if not feed:
            return {}
        ids = {fake: patch_id for patch_id, fake in self.store.patch_ids(b"".join(feed))}
        own = {key: ids.get(fake) for fake, (key, commit) in owners.items() if commit is None}
        matches: dict[object, list[str]] = {key: [] for key, _, _ in requests}
        for fake, (key, commit) in owners.items():
            if commit is not None and own.get(key) and ids.get(fake) == own[key]:
                matches[key].append(commit)
        return matches


def _pr_url(patch) -> str | None:
    for value in (patch.get("Forwarded"), patch.get("Upstream-Status")):
        if not value:
            continue
        match = _SUBMITTED.match(value)
        candidate = (match["url"] if match else value).strip()
        if "/pull/" in candidate or "#" in candidate:
            return candidate
    return None


def pull_request_info(store, target: Target, url: str, forge) -> dict:
    """A pull request's state from the forge, and for a merged one whether the target includes
    its merge commit. Counts read as in seed 000: the target is `ahead_by` commits ahead of, and
    `behind_by` behind, the merge commit; included when behind by 0. Computed locally when the
    store has both commits, else with the forge's compare API."""
    from patchforge.net.forge import parse_pr_url

    info: dict = {"url": url}
    try:
        ref = parse_pr_url(url)
    except UsageError as exc:
        info["error"] = exc.message
        return info
    if forge is None:
        info["error"] = "no forge client"
        return info
    try:
        pr = forge.pull_request(ref.repo, ref.number)
    except (NetworkError, PatchforgeError) as exc:
        info["error"] = str(exc)
        return info
    info.update({"state": pr.state, "merged": pr.merged, "merge_commit": pr.merge_commit_sha,
                 "title": pr.title})
    if pr.merged and pr.merge_commit_sha:
        merge = pr.merge_commit_sha
        if store.has_object(merge) and store.has_object(target.commit):
            # ahead_behind(a, b) = (in a not in b, in b not in a).
            behind, ahead = store.ahead_behind(merge, target.commit)
            info.update({"included": behind == 0, "ahead_by": ahead, "behind_by": behind,
                         "source": "local history"})
        else:
            try:
                cmp = forge.compare(ref.repo, merge, target.commit)
                info.update({"included": cmp.behind_by == 0, "ahead_by": cmp.ahead_by,
                             "behind_by": cmp.behind_by, "source": "forge compare"})
            except (NetworkError, PatchforgeError) as exc:
                info["included"] = None
                info["error"] = str(exc)
    return info


def forwarded_info(project, store, patch, target: Target, forge) -> dict | None:
    """The Forwarded (or Submitted [url]) pull request: its state and whether the target has it."""
    url = _pr_url(patch)
    if url is None:
        return None
    return pull_request_info(store, target, url, forge)


def drop_when(patch, target: Target, forwarded: dict | None, *, store=None,
              forge=None, names: set[str] | None = None) -> dict | None:
    """Evaluate `Drop-When`: a packaging specifier on the target's version
    (`vllm>=0.34`), or `merged <PR url>` (true once the PR is merged AND the target includes
    its merge commit; a merged PR the target does not have yet is not a reason to drop)."""
    condition = patch.get("Drop-When")
    if not condition:
        return None
    condition = condition.strip()
    result: dict = {"condition": condition, "true": None}
    if condition.lower().startswith("merged"):
        url = condition[len("merged"):].strip() or (forwarded or {}).get("url")
        if not url:
            result["reason"] = "no pull request named"
            return result
        if forwarded and forwarded.get("url") == url:
            info = forwarded
        elif store is not None:
            info = pull_request_info(store, target, url, forge)
        else:
            info = {}
        if info.get("merged") is None:
            result["reason"] = "no forge answer for the pull request" + (
                f": {info['error']}" if info.get("error") else "")
        elif not info["merged"]:
            result["true"] = False
            result["reason"] = f"the pull request is {info.get('state', 'not merged')}"
        elif info.get("included") is None:
            result["reason"] = "merged, but whether the target includes it is unknown"
        else:
            result["true"] = bool(info["included"])
            if not info["included"]:
                result["reason"] = "merged, but the target does not include the merge commit"
        return result
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        requirement = Requirement(condition)
    except InvalidRequirement as exc:
        result["reason"] = f"not a requirement: {exc}"
        return result
    from packaging.utils import canonicalize_name

    # `torch>=2.5` in a vllm patch says nothing about vllm's version: only a requirement on this
    # upstream (its name or its package) is evaluated against the target's version.
    known = {canonicalize_name(n) for n in (names or {target.upstream}) if n}
    if canonicalize_name(requirement.name) not in known:
        result["reason"] = (f"{requirement.name} is not this upstream "
                            f"({', '.join(sorted(known))}); cannot evaluate")
        return result
    if target.version is None:
        result["reason"] = "the target's version is unknown"
        return result
    try:
        version = Version(target.version)
    except InvalidVersion:
        result["reason"] = f"the target's version {target.version!r} is not PEP 440"
        return result
    result["true"] = requirement.specifier.contains(version, prereleases=True)
    result["version"] = target.version
    return result


def series_status(project, store, targets: dict[str, Target], *, forge=None,
                  upstreams: list[str] | None = None) -> list[PatchStatus]:
    out: list[PatchStatus] = []
    for upstream in upstreams or project.upstream_names():
        if upstream not in targets:
            continue
        target = targets[upstream]
        judge = SeriesJudge(store, target)
        names = {upstream, getattr(project.config.upstreams.get(upstream), "package", None)}
        landed: list[tuple[PatchStatus, object]] = []
        patches = [(name, project.read_patch(upstream, name))
                   for name in project.patch_names(upstream)]
        judge.prefetch(patches)
        # The history between base and target (git processes, the GIL free) is read by a second
        # thread while this one judges the patches; only landed patches will need it.
        series_paths = sorted({p for _, patch in patches for p in patch.paths})
        history = Background(_history_index, store, target, series_paths) \
            if target.base_commit != target.commit and series_paths else None
        for name, patch in patches:
            verdict = judge.judge(name, patch)
            status = PatchStatus(
                upstream=upstream, name=name, state=verdict.state,
                confidence=verdict.confidence, hunks_total=verdict.hunks_total,
                hunks_landed=verdict.hunks_landed, evidence=verdict.evidence,
                files=[{"path": f.path, "target_path": f.target_path,
                        "hunks": [{"index": h.index + 1, "forward": h.forward,
                                   "landed": h.landed} for h in f.hunks]}
                       for f in verdict.files],
                verdict=verdict)
            if verdict.state in ("upstreamed", "partial"):
                landed.append((status, patch))
            status.forwarded = forwarded_info(project, store, patch, target, forge)
            if status.forwarded and status.forwarded.get("merged") and \
                    status.forwarded.get("included"):
                status.evidence.append(f"forwarded PR merged ({status.forwarded['url']}) and "
                                       "included in the target")
            status.drop_when = drop_when(patch, target, status.forwarded, store=store,
                                         forge=forge, names=names)
            if verdict.state in ("applies", "offset", "fuzz", "unsure", "partial") and \
                    patch.get_all("Keeps"):
                # Applying is not enough: a fix that applies in the wrong place (or that a later
                # upstream change neutralised) breaks its Keeps: invariants.
                from patchforge.invariants import check_patch_invariants
                broken = check_patch_invariants(patch, judge.read_current)
                status.evidence.extend(broken)
            else:
                broken = []
            status.attention = verdict.state in ATTENTION_STATES or bool(broken) or \
                bool(status.drop_when and status.drop_when.get("true"))
            out.append(status)
        index = None
        if history is not None and landed:
            index = history.result()
        elif history is not None:
            history.wait()  # nothing landed: its answer is not needed, but no thread outlives us
        if index is not None:
            # Where the landed fixes came from: one read of the history for the whole series
            # (again for the paths of a patch that followed a rename, outside the series').
            needed = {p for status, _ in landed for p in _patch_paths(status.verdict)}
            if not needed <= set(index.paths):
                index = HistoryIndex(store, target, sorted(needed))
            matches = index.patch_id_matches([(id(status), patch.diff,
                                               _patch_paths(status.verdict))
                                              for status, patch in landed])
            for status, patch in landed:
                commits = index.commits_touching(_patch_paths(status.verdict))
                status.landed_in = landed_in(store, target, patch, status.verdict,
                                             commits=commits)
                for commit in matches.get(id(status), []):
                    status.evidence.append(f"patch-id matches upstream commit {commit}")
    return out


def resolve_targets(project, store, specs: dict[str, str] | None) -> dict[str, Target]:
    """Targets per upstream: the locked pins, or what `--against` names (resolved into the store)."""
    from patchforge.ops.resolve import ensure_pinned, pin_for_spec

    lock = project.lock
    targets: dict[str, Target] = {}
    for upstream in project.upstream_names():
        if upstream not in lock.upstreams:
            continue
        pin = lock.upstreams[upstream]
        ensure_pinned(project, store, upstream, pin)
        if specs and upstream in specs:
            new_pin = pin_for_spec(project, store, project.config.upstream(upstream),
                                   specs[upstream])
            targets[upstream] = Target(upstream, pin.commit, new_pin.commit, new_pin.label,
                                       new_pin.version)
        else:
            targets[upstream] = Target(upstream, pin.commit, pin.commit, pin.label, pin.version)
    return targets
