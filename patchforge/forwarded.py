"""What the world says about a patch beyond its diff: the pull request it was forwarded as
(`Forwarded:` / `Upstream-Status: Submitted [URL]`: open, merged, included in the target) and its
`Drop-When:` condition evaluated on a target."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from patchforge import logs
from patchforge.errors import NetworkError, PatchforgeError, UsageError
from patchforge.judge import Target
from patchforge.model.words import counted

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore


_SUBMITTED = re.compile(r"^Submitted\s*\[(?P<url>[^\]]+)\]", re.I)
# A header line that may name a pull request (_pr_url, a `Drop-When: merged`).
_MAY_NAME_A_PULL = re.compile(rb"^(?:forwarded\s*:|upstream-status\s*:\s*submitted|"
                              rb"drop-when\s*:\s*merged)", re.I | re.M)


def _may_name_a_pull(data: bytes) -> bool:
    """Whether a patch file's header may name a pull request, looked for in its bytes before
    its description's `---` or its diff (a regular expression over a long diff costs more than
    the lookups it spares)."""
    ends = [i for i in (data.find(b"\n---"), data.find(b"\ndiff ")) if i >= 0]
    return bool(_MAY_NAME_A_PULL.search(data, 0, min(ends) if ends else len(data)))


def _pr_url(patch: PatchFile) -> str | None:
    """The pull request a patch was forwarded as (Forwarded, else Submitted [url]), or what
    looks like one (then `status` and `lint` say why it cannot be followed); None for a fix
    sent elsewhere (a mailing list's archive)."""
    for value in (patch.get("Forwarded"), patch.get("Upstream-Status")):
        if not value:
            continue
        match = _SUBMITTED.match(value)
        candidate = (match["url"] if match else value).strip()
        if _names_a_pull(candidate):
            return candidate
    return None


def _names_a_pull(candidate: str) -> bool:
    """A URL with a /pull path (`/pull/N`, and the `/pulls/N` of an API address pasted by
    mistake, which status would otherwise never follow), or `OWNER/REPO#N`. A fragment of
    another URL (a mail archive's `msg.html#m1`) is no pull request: it was reported as one
    that "is not a pull request URL" on every status."""
    if "://" in candidate:
        return "/pull" in candidate.split("#", 1)[0]
    return "#" in candidate


def pull_request_info(store: UpstreamStore, target: Target, url: str, forge, lookups=None) -> dict:
    """A pull request's state from the forge, and for a merged one whether the target includes
    its merge commit. Counts read as in seed 000: the target is `ahead_by` commits ahead of, and
    `behind_by` behind, the merge commit; included when behind by 0. Computed locally when the
    store has both commits, else with the forge's compare API."""
    from patchforge.net.forge import answers_for, parse_pr_url, web_hosts

    info: dict = {"url": url}
    try:
        ref = parse_pr_url(url)
    except UsageError as exc:
        # With the form expected: a /pulls/7 pasted from the API is one letter from right.
        info["error"] = exc.message + (f" ({exc.hint})" if exc.hint else "")
        return info
    if forge is None:
        info["error"] = "no forge client"
        return info
    if not answers_for(forge, ref):
        # Asked by its owner/name and number, the configured forge would answer about another
        # pull request (merged, perhaps: a fix dropped for a change that is not its own).
        hosts = ", ".join(sorted(web_hosts(forge.api_url, getattr(forge, "web_host", None))))
        info["error"] = (f"{ref.host} is not the host of the configured forge ({hosts}): "
                         "not asked (a forge.api-url in front of that host names it with "
                         "forge.web-host)")
        return info
    answer = lookups.answers.get(ref) if lookups is not None else None
    if answer is None:
        try:
            answer = forge.pull_request(ref.repo, ref.number)
        except (NetworkError, PatchforgeError) as exc:
            answer = exc
    if isinstance(answer, PatchforgeError):
        info["error"] = str(answer)
        return info
    pr = answer
    info.update({"state": pr.state, "merged": pr.merged, "merge_commit": pr.merge_commit_sha,
                 "title": pr.title})
    if pr.merged and pr.merge_commit_sha:
        merge = pr.merge_commit_sha
        if store.has_object(merge) and store.has_object(target.commit):
            # ahead_behind(a, b) = (in a not in b, in b not in a).
            behind, ahead = store.ahead_behind(merge, target.commit)
            if behind and not store.share_history(merge, target.commit):
                # A wheel's or a directory's import is a commit without history: that it is
                # no descendant of the merge commit says nothing about whether it holds the
                # change. (A target that includes it shares its history: asked only here.)
                info["included"] = None
                info["error"] = ("the target has no history that could hold the merge commit "
                                 "(an import of a wheel or a directory): not compared")
            else:
                info.update({"included": behind == 0, "ahead_by": ahead, "behind_by": behind,
                             "source": "local history"})
        elif lookups is not None and lookups.unreachable:
            info["included"] = None
            info["error"] = "the forge is unreachable: not compared"
        else:
            cmp = lookups.compared.get((ref.repo, merge, target.commit)) \
                if lookups is not None else None
            if cmp is None:
                try:
                    cmp = forge.compare(ref.repo, merge, target.commit)
                except (NetworkError, PatchforgeError) as exc:
                    cmp = exc
            if isinstance(cmp, PatchforgeError):
                info["included"] = None
                info["error"] = str(cmp)
            else:
                info.update({"included": cmp.includes_base, "ahead_by": cmp.ahead_by,
                             "behind_by": cmp.behind_by, "source": "forge compare"})
    return info


def ask_forge_ahead(project: Project, store: UpstreamStore, forge, targets: dict[str, Target]):
    """What `status` and `lint` ask the forge about the series, asked before they take the
    project's read lock (a rebase's write-out must not wait on a slow forge): every forwarded
    pull request (lookup_forwarded), and for a merged one whose merge commit the store cannot
    compare with a target, the forge's comparison. The series is read without the lock, so
    it may be a write-out's half: what it lacks is asked again under the lock, as before.
    Returns the PullLookups to hand them (None: nothing asked, the series unreadable)."""
    if forge is None:
        return None
    try:
        # Only the patches whose header may name a pull request are parsed here (the others
        # are parsed under the lock, as before, beside the history walk).
        series = {upstream: [project.read_patch(upstream, name)
                             for name in project.patch_names(upstream)
                             if _may_name_a_pull(project.read_patch_bytes(upstream, name))]
                  for upstream in targets}
    except (PatchforgeError, OSError):
        return None  # said under the lock, where it is read again
    lookups = lookup_forwarded(project, forge, [p for ps in series.values() for p in ps])
    if lookups is None or lookups.unreachable:
        return lookups
    from patchforge.net.forge import answers_for, parse_pr_url  # loaded by the lookups already

    for upstream, patches in series.items():
        target = targets[upstream]
        for patch in patches:
            drop = (patch.get("Drop-When") or "").strip()
            for url in (_pr_url(patch), drop[len("merged"):].strip()
                        if drop.lower().startswith("merged") else None):
                try:
                    ref = parse_pr_url(url) if url else None
                except UsageError:
                    continue
                answer = lookups.answers.get(ref) if ref is not None else None
                if ref is None or isinstance(answer, PatchforgeError) or answer is None or \
                        not answers_for(forge, ref) or not (answer.merged and
                                                            answer.merge_commit_sha):
                    continue
                merge = answer.merge_commit_sha
                key = (ref.repo, merge, target.commit)
                if key in lookups.compared or \
                        store.has_object(merge) and store.has_object(target.commit):
                    continue
                try:
                    lookups.compared[key] = forge.compare(ref.repo, merge, target.commit)
                except (NetworkError, PatchforgeError) as exc:
                    lookups.compared[key] = exc
    return lookups


def forwarded_info(project: Project, store: UpstreamStore, patch: PatchFile, target: Target, forge,
                   lookups=None) -> dict | None:
    """The Forwarded (or Submitted [url]) pull request: its state and whether the target has it."""
    url = _pr_url(patch)
    if url is None:
        return None
    return pull_request_info(store, target, url, forge, lookups)


def lookup_forwarded(project: Project, forge, patches):
    """Every Forwarded pull request of `patches` asked at once: net.forge.lookup_pulls's
    PullLookups, or None when there is nothing to ask. Says once, as a warning, when the forge
    cannot be reached."""
    urls = []
    for patch in patches:
        drop = (patch.get("Drop-When") or "").strip()
        urls += [url for url in (_pr_url(patch), drop[len("merged"):].strip()
                                 if drop.lower().startswith("merged") else None) if url]
    if forge is None or not urls:
        return None
    # The HTTP stack is loaded only for a series that names a pull request: it takes about
    # 20 ms of a command's start.
    from patchforge.net.forge import answers_for, lookup_pulls, parse_pr_url

    refs = []
    for url in urls:
        try:
            ref = parse_pr_url(url)
        except UsageError:
            continue
        if answers_for(forge, ref):
            refs.append(ref)
    if not refs:
        return None
    logs.info("patchforge.forwarded", "asking the forge about %s",
              counted(len(refs), "pull request"))
    lookups = lookup_pulls(forge, refs)
    if lookups.unreachable:
        # A warning is shown without -v (logging's last resort prints it): only this rare
        # path loads `logging` (see patchforge.logs).
        import logging

        offline = getattr(project, "offline", False)
        logging.getLogger("patchforge.forwarded").warning(
            "warning: the forge is unreachable (%s): the state of %s is unknown%s",
            lookups.unreachable, counted(len(refs), "forwarded pull request"),
            "" if offline else "; try --offline to use the answers cached by an earlier run")
    return lookups


def drop_when(patch: PatchFile, target: Target, forwarded: dict | None, *,
              store: UpstreamStore | None = None, forge=None, names: set[str] | None = None,
              lookups=None) -> dict | None:
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
            info = pull_request_info(store, target, url, forge, lookups)
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
    from packaging.version import Version

    try:
        requirement = Requirement(condition)
    except InvalidRequirement as exc:
        result["reason"] = f"not a requirement: {exc}"
        return result
    # Only a version condition on the upstream is judged. A marker (`; python_version < "3"`)
    # was dropped without a word, and would be the Python running patchforge's, never the
    # deployment's; an extra or a URL says nothing of a version; with no version at all the
    # condition was always true: each said "true: remove the fix".
    unjudged = ("an environment marker" if requirement.marker is not None else
                "an extra" if requirement.extras else "a URL" if requirement.url else
                "no version" if not requirement.specifier else None)
    if unjudged:
        result["reason"] = (f"not a requirement on the upstream's version: it names {unjudged}, "
                            "which patchforge does not judge")
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
    except ValueError:  # InvalidVersion, or a number longer than int() takes
        result["reason"] = f"the target's version {target.version[:60]!r} is not PEP 440"
        return result
    try:
        result["true"] = requirement.specifier.contains(version, prereleases=True)
    except ValueError:
        # A version of the condition's own with a number longer than int() takes.
        result["reason"] = "a version in it has a number longer than patchforge reads"
        return result
    result["version"] = target.version
    return result
