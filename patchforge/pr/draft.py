"""Drafting one fix as an upstream pull request, without anything leaving the machine.

Owns: where the PR goes (the upstream's git repository: its `url`, or for a wheel or directory
upstream the `git-url` of its configuration table, fetched blob-less into the store at `follow`,
the remote's HEAD, or `--onto`), carrying the patch onto that head with the pieces `rebase` uses
(landed detection through `judge.SeriesJudge`; exact or offset application; else git's
3-way `merge-file` with the series state before the patch as the merge base), the commit (made
in the store without a checkout, author and date from the header, so re-running gives the same
commit), its `git format-patch` text, and the body (`patchforge.pr.body`). A fix that already
landed, or that conflicts with the head, gives a draft in state "upstreamed", "conflict" or
"obsolete" and no commit.
"""
from __future__ import annotations

import re
from typing import Any, TYPE_CHECKING

from patchforge.errors import StoreError, UsageError
from patchforge.formats.patchfile import refuse_control_characters
from patchforge.model.record import field, record
from patchforge.pr.body import Body, Facts, find_template, make_body
from patchforge.pr.message import (CommitSpec, bug_links, build_commit_spec, check_mail_reading,
                                   submitter)
from patchforge.store.diff import check_path
from patchforge.store.giturl import is_plain_path, redact, store_namespace

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

BRANCH_PREFIX = "patchforge/"
# A DCO file at the top of the upstream means it checks Signed-off-by (vLLM has one).
DCO_FILES = ("DCO", "DCO.md", "DCO.txt", "dco.txt")
_GITHUB_URL = re.compile(r"^(?:https?://|ssh://(?:[^@/]+@)?|[^@/\s]+@)(?:www\.)?github\.com[:/]"
                         r"(?P<owner>[^/\s]+)/(?P<name>[^/\s]+?)(?:\.git)?/?$", re.I)


@record(frozen=True)
class PrTarget:
    """Where the pull request goes: the upstream's git repository and the head it is based on."""

    upstream: str
    url: str
    ref: str  # what was fetched (branch, tag or commit id)
    branch: str  # the base branch of the pull request
    commit: str
    forge_repo: str | None


@record(frozen=True)
class MadeOn:
    """A line of the series before a fix, within the fix's hunks, that the upstream at the pin
    does not have: `path` line `line` (1-based, in the file the fix is made on) holds `text`
    (where an earlier patch took lines out: `taken_out`, and `text` is the first of them),
    made by patch `patch` (None: no earlier patch's diff shows it)."""

    path: str
    line: int
    text: str
    patch: str | None
    taken_out: bool = False

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "text": self.text, "patch": self.patch,
                "taken_out": self.taken_out}


@record
class Draft:
    upstream: str
    name: str  # patch file name
    state: str  # ready | upstreamed | conflict | obsolete
    target: PrTarget
    how: str = ""  # applies | offset | merged (ready only)
    detail: str = ""
    evidence: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # conflicting / gone files, or changed ones
    # conflict: the lines of the series before it that the patch is made on and the upstream
    # does not have, when they are the conflict (it conflicts onto the pin itself)
    made_on: list[MadeOn] = field(default_factory=list)
    landed_in: str | None = None
    commit: str | None = None
    # The branch of the fix's open pull request when it is not patchforge/<name> (opened
    # under the fix's earlier name: submit.forwarded_pull_branch); None: patchforge/<name>.
    head_branch: str | None = None
    spec: CommitSpec | None = None
    signoff_reason: str | None = None
    format_patch: bytes = b""
    body: Body | None = None
    # Said beside the draft (a template that is a symbolic link, followed or not used).
    notes: list[str] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return self.name[:-len(".patch")] if self.name.endswith(".patch") else self.name

    @property
    def branch(self) -> str:
        return self.head_branch or BRANCH_PREFIX + self.stem

    @property
    def title(self) -> str:
        return self.spec.subject if self.spec else self.stem

    @property
    def patch_file_name(self) -> str:
        return f"0001-{self.stem}.patch"

    @property
    def body_text(self) -> str:
        """PR.md: a draft that carries its patch has one."""
        assert self.body is not None, "a carried draft has its body"
        return self.body.text

    def to_json(self) -> dict:
        doc: dict[str, Any] = {"upstream": self.upstream, "patch": self.name, "state": self.state,
               "onto": {"url": _redact(self.target.url), "ref": self.target.ref,
                        "branch": self.target.branch, "commit": self.target.commit,
                        "forge_repo": self.target.forge_repo},
               "how": self.how or None, "detail": self.detail, "evidence": self.evidence,
               "files": self.files, "made_on": [m.to_json() for m in self.made_on],
               "landed_in": self.landed_in, "commit": self.commit,
               "branch": self.branch, "title": self.title}
        if self.spec is not None:
            doc["author"] = str(self.spec.author)
            doc["co_authors"] = [str(p) for p in self.spec.co_authors]
            doc["date_source"] = self.spec.date_source
            doc["trailers"] = [f"{k}: {v}" for k, v in self.spec.trailers]
            doc["signoff"] = self.signoff_reason
        if self.body is not None:
            doc["body"] = {"template": self.body.template, "filled": self.body.filled,
                           "unfilled": self.body.unfilled, "notes": self.notes}
        return doc


def _redact(url: str) -> str:
    """A URL without any user:password part (a token pasted into a remote URL stays secret)."""
    return redact(url)


def forge_repo_of(url: str) -> str | None:
    """owner/name of a github.com URL (https, ssh or scp-like), else None."""
    match = _GITHUB_URL.match(url.strip())
    return f"{match['owner']}/{match['name']}" if match else None


def pr_git_url(project: Project, upstream: str) -> str:
    config = project.config.upstream(upstream)
    url = config.url if config.kind == "git" else config.git_url
    if isinstance(url, str) and url.strip():
        url = url.strip()
        # A relative local path is relative to the project root (where the configuration that
        # names it lives), not to wherever patchforge was started.
        if is_plain_path(url) and not url.startswith("/"):
            url = str((project.root / url).resolve())
        return url
    raise UsageError(
        f"upstream {upstream} is a {config.kind} upstream: it has no history to base a pull "
        "request on", path=str(project.config_path),
        hint=f"name its git repository: `git-url = \"https://github.com/OWNER/REPO\"` under "
             f"[tool.patchforge.upstreams.{upstream}]")


def _remote_head_branch(store: UpstreamStore, url: str) -> str | None:
    """The branch a remote's HEAD points to (`git ls-remote --symref URL HEAD`)."""
    return store.remote_head_branch(url, what=f"asking {_redact(url)} for its HEAD")


def resolve_pr_target(project: Project, store: UpstreamStore, upstream: str,
                      onto: str | None = None) -> PrTarget:
    """Fetch the development head (or `onto`) of the upstream's git repository into the store."""
    from patchforge.store.gitsource import fetch_git_upstream

    config = project.config.upstream(upstream)
    url = pr_git_url(project, upstream)
    follow = config.follow
    if not follow and not project.offline:
        follow = _remote_head_branch(store, url)
    follow = follow or "main"
    ref = onto or follow
    try:
        commit = fetch_git_upstream(store, upstream, url, ref, offline=project.offline)
    except StoreError as exc:
        if onto or not config.follow:
            raise
        from patchforge.formats.config import follow_not_found
        raise follow_not_found(project.config_path, upstream, follow, exc) from None
    branch = follow
    if onto:
        try:
            namespace = store_namespace(upstream, url)
            store.resolve(f"refs/patchforge/remotes/{namespace}/heads/{onto}")
            branch = onto  # --onto names a branch: the pull request is against that branch
        except StoreError:
            pass
    forge_repo = config.forge_repo or forge_repo_of(url)
    return PrTarget(upstream, url, ref, branch, commit, forge_repo)


# ---- carrying the patch onto the head --------------------------------------------------------

@record
class Carried:
    state: str  # ready | upstreamed | conflict | obsolete
    how: str = ""
    detail: str = ""
    evidence: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    changes: dict[str, bytes | None] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)
    landed_in: str | None = None


def carry_onto(store: UpstreamStore, upstream: str, name: str, patch: PatchFile, *, pin_commit: str,
               head: str, label: str, base_files: dict[str, bytes | None],
               series: list | None = None) -> Carried:
    """The patch alone on `head`, as file contents; `base_files` is the series state just
    before the patch on the pin (the merge base a 3-way merge needs). The decision is the one
    judge's (`judge.SeriesJudge`), the same `status` and `rebase` use. `series` (name, patch):
    the whole series, whose files upstream moved is asked for all of them at once, as
    `status --against` and `rebase --to` ask it (judge.series_renames)."""
    from patchforge.judge import SeriesJudge, Target, landed_in, series_renames

    target = Target(upstream, pin_commit, head, label, None)
    judge = SeriesJudge(store, target, labels=("upstream", "base", f"patch {name}"),
                        renames=series_renames(store, target, series) if series else None)
    judge.old.current.update(base_files)
    judgement = judge.decide(name, patch)
    verdict = judgement.verdict
    if judgement.outcome == "landed":
        if verdict.state == "upstreamed":
            return Carried("upstreamed",
                           detail=f"already upstream ({verdict.confidence} confidence)",
                           evidence=judgement.evidence,
                           landed_in=landed_in(store, target, patch, verdict))
        return Carried("upstreamed", detail="the 3-way merge leaves nothing to change",
                       evidence=judgement.evidence)
    if judgement.outcome == "stop":
        state = "obsolete" if judgement.stop_kind == "obsolete" else "conflict"
        return Carried(state, detail=judgement.message, evidence=judgement.evidence,
                       files=judgement.files)
    assert judgement.how is not None, "a patch that applies says how"
    how = {"merged": "merged", "offset": "offset", "clean": "applies"}[judgement.how]
    detail = {"merged": "3-way merged", "offset": "applies with offset",
              "applies": "applies exactly"}[how]
    if verdict.state == "partial":
        detail += f"; {verdict.hunks_landed} of {verdict.hunks_total} hunks already upstream"
    if judgement.parts:
        # A change inside a hunk already upstream: the commit carries the others alone.
        from patchforge.apply.parts import parts_said

        detail += f"; {parts_said(patch, judgement.parts)}"
    if verdict.renames:
        detail += "; follows " + ", ".join(f"{a} -> {b}" for a, b in verdict.renames.items())
    changes: dict[str, bytes | None] = {}
    modes: dict[str, str] = {}
    for change in judgement.changes:
        if change.new_path is not None:
            changes[change.new_path] = change.new
            modes[change.new_path] = change.new_mode
        if change.old_path is not None and change.old_path != change.new_path \
                and not change.copy:
            changes[change.old_path] = None
    return Carried("ready", how=how, detail=detail, evidence=judgement.evidence,
                   files=sorted(changes), changes=changes, modes=modes)


def made_on_earlier(store: UpstreamStore, upstream: str, name: str, patch: PatchFile, *,
                    pin_commit: str, head: str, state, files: list[str],
                    read_patch) -> list[MadeOn]:
    """Why a patch that conflicts with `head` does: when it conflicts onto the pin itself (the
    upstream the series is on), it is made on lines the earlier patches of its base made
    (`state`: the series before it, `state.base` the pin's files), which no upstream has
    until they are sent: those lines, within its hunks, each with the patch that made it
    (`read_patch(name)` reads one). [] when the conflict is the upstream's move since the pin
    (a rebase to `head` stops on it, where it is resolved)."""
    if head != pin_commit:
        onto_pin = carry_onto(store, upstream, name, patch, pin_commit=pin_commit,
                              head=pin_commit, label="the pin", base_files=dict(state.current))
        if onto_pin.state not in ("conflict", "obsolete"):
            return []
        files = onto_pin.files or files
    from patchforge.apply.undone import Undone, _opcodes, said, who_changed

    found: list[MadeOn] = []
    for path in files:
        makers = state.touched_by.get(path, [])
        made = state.current.get(path)
        upstream_file = state.base.get(path)
        # A file the pin does not have that an earlier patch made (a new file, a rename's or
        # copy's destination: the fix is "obsolete" there, its file nowhere): each of its
        # lines is that patch's, the first that touched it unless a later one's diff adds it.
        maker = makers[0] if upstream_file is None and path in state.base and makers else ""
        if maker:
            upstream_file = b""
        if not makers or made is None or upstream_file is None:
            continue
        made_lines = made.splitlines(keepends=True)
        up_lines = upstream_file.splitlines(keepends=True)
        changed = [op for op in _opcodes(up_lines, made_lines) if op[0] != "equal"]
        earlier = [(n, read_patch(n)) for n in makers]
        for fp in patch.file_patches:
            if fp.old_path != path:
                continue
            for hunk in fp.hunks:
                lo = _hunk_at(made_lines, hunk.old_lines(), hunk.old_start - 1)
                if lo is None:
                    continue
                hi = lo + len(hunk.old_lines())
                for _, i1, i2, j1, j2 in changed:
                    if j1 < j2 and j1 < hi and j2 > lo:
                        at = max(j1, lo)
                        text, taken_out = said(made_lines[at]), False
                    elif j1 == j2 and lo < j1 < hi:
                        at, text, taken_out = j1, said(up_lines[i1]), True
                    else:
                        continue
                    who = who_changed(path, Undone(at + 1, tuple(up_lines[i1:i2]),
                                                   tuple(made_lines[j1:j2])), earlier, maker)
                    item = MadeOn(path, at + 1, text.strip(), who or None, taken_out)
                    if item not in found:
                        found.append(item)
    return found


def _hunk_at(lines: list[bytes], old: list[bytes], expected: int) -> int | None:
    """Where a hunk's pre-image is in `lines`: at `expected` (its header's place), else its
    first place elsewhere, else None."""
    size, expected = len(old), max(expected, 0)
    if lines[expected:expected + size] == old:
        return expected
    return next((at for at in range(len(lines) - size + 1) if lines[at:at + size] == old), None)


# ---- the draft -------------------------------------------------------------------------------

def signoff_reason(project: Project, store: UpstreamStore, upstream: str, head: str,
                   template: tuple[str, str] | None) -> str | None:
    """Why the commit carries Signed-off-by (None: it does not)."""
    if project.config.upstream(upstream).signoff:
        return "configuration (signoff = true)"
    for path in DCO_FILES:
        if store.read_blob(head, path) is not None:
            return f"the upstream has a {path} file"
    if template is not None and "signed-off-by" in template[1].lower():
        return f"{template[0]} asks for Signed-off-by"
    return None


def _tree_file(store: UpstreamStore, commit: str, path: str) -> tuple[str, bytes] | None:
    """(mode, bytes) of `path` at `commit`, None when it is no file there (absent, a
    directory, a path no tree holds, such as a link's `.git/x`): a symbolic link's bytes are
    the path it names."""
    try:
        check_path(path)
    except StoreError:
        return None
    entry = store.entry(commit, path)
    data = store.read_blob(commit, path) if entry is not None else None
    return (entry[0], data) if entry is not None and data is not None else None


def format_patch(store: UpstreamStore, commit: str) -> bytes:
    """`git format-patch` of one commit (fixed options: see UpstreamStore.format_patch)."""
    return store.format_patch(commit)


def _profile_facts(project: Project, patch: PatchFile) -> tuple[tuple[tuple[str, str], ...], bool]:
    configured = project.config.profiles
    named = [p for value in patch.get_all("Profiles") for p in re.split(r"[\s,]+", value) if p]
    if not named:
        return tuple(configured.items()), True
    return tuple((p, configured.get(p, "")) for p in named), False


def draft_pr(project: Project, store: UpstreamStore, name: str, *, onto: str | None = None,
             today=None) -> Draft:
    """Carry patch NAME onto the upstream's head and build its commit, format-patch and body.

    Writes nothing but objects in the store; `patchforge.pr.submit` writes, pushes and opens.
    """
    from patchforge.stack import series_state
    from patchforge.pins import ensure_pinned

    upstream, file_name = project.find_patch(name)
    patch = project.read_patch(upstream, file_name)
    # The commit made from the header (its subject, author, trailers) and the description
    # (its body), and the pull request's title and body, would carry it to every terminal
    # showing them upstream (`git log`).
    refuse_control_characters(patch, str(project.series_dir(upstream) / file_name),
                              ", which the commit and the pull request would carry upstream")
    pin = project.lock.pin(upstream)
    ensure_pinned(project, store, upstream, pin)
    target = resolve_pr_target(project, store, upstream, onto)
    index = project.patch_names(upstream).index(file_name)
    state = series_state(project, store, upstream, upto=index, commit=pin.commit, strict=False,
                         base_of=patch)  # its base: another profile's fix is not in it
    series = [(n, patch if n == file_name else project.read_patch(upstream, n))
              for n in project.patch_names(upstream)]
    carried = carry_onto(store, upstream, file_name, patch, pin_commit=pin.commit,
                         head=target.commit, label=target.ref, base_files=dict(state.current),
                         series=series)
    draft = Draft(upstream, file_name, carried.state, target, carried.how, carried.detail,
                  carried.evidence, carried.files, landed_in=carried.landed_in)
    if carried.state in ("conflict", "obsolete"):
        draft.made_on = made_on_earlier(
            store, upstream, file_name, patch, pin_commit=pin.commit, head=target.commit,
            state=state, files=carried.files,
            read_patch=lambda n: project.read_patch(upstream, n))
        made = {item.path for item in draft.made_on}
        if carried.state == "obsolete" and made and made >= set(carried.files):
            # Its files are not gone: earlier patches of the series make them, which the base
            # does not have (it was said "not in the base either (nor made by an earlier
            # patch)"). A conflict with them, sent first, as for lines they made.
            draft.state = "conflict"
            draft.detail = (f"{', '.join(sorted(made))} made by an earlier patch of the "
                            f"series, which {target.ref} does not have")
            draft.evidence = [draft.detail]
    if carried.state != "ready":
        return draft
    template = find_template(lambda path: _tree_file(store, target.commit, path),
                             draft.notes)
    draft.signoff_reason = signoff_reason(project, store, upstream, target.commit, template)
    signer = (submitter(project.root, draft.signoff_reason)
              if draft.signoff_reason is not None else None)
    spec = build_commit_spec(patch, name=draft.stem, signoff=signer, today=today)
    draft.spec = spec
    draft.commit = store.commit_files(
        target.commit, carried.changes, message=spec.message,
        author=(spec.author.name, spec.author.email, spec.date), modes=carried.modes)
    draft.format_patch = format_patch(store, draft.commit)
    check_mail_reading(draft.format_patch, spec.message,
                       str(project.patch_path(upstream, file_name)))
    profiles, profiles_all = _profile_facts(project, patch)
    version = pin.version or pin.label
    if re.fullmatch(r"[0-9a-f]{40}", version):
        version = version[:12]
    facts = Facts(
        subject=spec.subject, description=patch.description_text, bugs=tuple(bug_links(patch)),
        origin=(patch.get("Origin") or "").replace("\n", " ").strip() or None,
        profiles=profiles, profiles_all=profiles_all,
        carried_on=f"{upstream} {version} ({pin.kind})", image=project.config.image,
        paths=tuple(carried.files), forge_repo=target.forge_repo,
        onto=f"`{target.ref}` at {target.commit[:12]}",
        how={"applies": "applies exactly", "offset": "applies with offset",
             "merged": "3-way merged"}[carried.how])
    draft.body = make_body(facts, template)
    return draft
