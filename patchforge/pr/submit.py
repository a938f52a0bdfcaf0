"""What `pr` does with a draft: write it out, push its branch, open (or update) the draft PR, and
record the PR in the patch header.

Owns: the output directory (`0001-<name>.patch` from git format-patch, `PR.md` with exactly the
body sent to the forge, `pr.json` with what was drafted), the push of `patchforge/<name>` to the
user's fork straight from the store (forced: the branch belongs to this one fix and is rewritten
whenever the fix is re-drafted), the forge calls (an open PR from that branch is updated, never
duplicated), and writing `Forwarded` and `Upstream-Status: Submitted [url]` back into the patch:
under the repository lock, atomically, every other byte of the file unchanged.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import PatchforgeError, StoreError, UsageError
from patchforge.fsutil import RepoLock, atomic_write, fsync_dir, parse_json, writing_project
from patchforge.model.record import record
from patchforge.pr.draft import Draft, _redact
from patchforge.store.git import run_git
from patchforge.store.giturl import check_git_url, is_plain_path

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# owner of a fork URL: https://host/OWNER/repo(.git), ssh://[user@]host[:port]/OWNER/repo,
# user@host:OWNER/repo.
_FORK_OWNER = re.compile(r"^(?:[a-z][a-z0-9+.-]*://(?:[^/@]*@)?[^/]+/|[^@/\s]+@[^:/\s]+:)"
                         r"(?P<owner>[^/\s]+)/[^/\s]+?/?$", re.I)


@record
class Pushed:
    remote: str  # redacted
    branch: str
    commit: str


@record
class Opened:
    action: str  # opened | updated
    number: int
    url: str
    repo: str
    head: str
    base: str
    kept_description: bool = False  # the description edited on the forge was left as it is


def recorded_sent_body(out_dir: Path, draft: Draft) -> str | None:
    """sha256 of the description the last `pr --open` of this draft's directory sent (pr.json's
    `pull.body_sha256`); None without one."""
    digest = (recorded_sent(out_dir, draft) or {}).get("body_sha256")
    return digest if isinstance(digest, str) else None


def default_out_dir(project: Project, draft: Draft) -> Path:
    """.patchforge/pr/<upstream>/<name>/. A directory an earlier patchforge kept at
    .patchforge/pr/<name>/ for this very fix (its pr.json says so) is moved there first: it
    holds PR.md as the user filled it in and what the last `pr --open` sent."""
    out = project.pr_dir(draft.upstream, draft.name)
    legacy = project.state_dir / "pr" / draft.stem
    # A fix named like an upstream: its old directory is now that upstream's, left as it is.
    if out.exists() or draft.stem in project.upstream_names() or not legacy.is_dir() or \
            _drafted_for(legacy) != (draft.upstream, draft.name):
        return out
    # Drafted under this name, but its pull request is the one another fix's Forwarded names
    # now (the fix renamed since; this is a new one): it is that fix's, moved there if that
    # one has no directory yet, else left alone.
    recorded = _recorded_pull(legacy / "pr.json")
    owner = _others_pulls(project, draft).get(recorded[0]) if recorded is not None else None
    if owner is not None:
        upstream, _, name = owner.partition("/")
        out_of_owner = project.pr_dir(upstream, name)
        if "/" not in name and not out_of_owner.exists():  # (not one set aside)
            _move_dir(legacy, out_of_owner)
        return out
    _move_dir(legacy, out)
    return out


def _move_dir(source: Path, destination: Path) -> None:
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, destination)
    fsync_dir(destination.parent)
    fsync_dir(source.parent)


def _drafted_for(out_dir: Path) -> tuple[str, str] | None:
    """(upstream, patch file name) of the fix whose draft `out_dir` holds (its pr.json)."""
    try:
        document = parse_json((out_dir / "pr.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    upstream, name = document.get("upstream"), document.get("patch")
    return (upstream, name) if isinstance(upstream, str) and isinstance(name, str) else None


def refuse_another_fixs_draft(project: Project, out_dir: Path, draft: Draft) -> None:
    """Refuse (exit 2, nothing written) an `--out` directory that holds another fix's draft
    (its pr.json names that fix) with something of that fix's in it: a PR.md changed by hand,
    which was kept and sent as this fix's pull request's description, or the record of that
    fix's pull request, which was read as this fix's and written over. A draft of another fix
    with neither is written over, as a dry run's scratch directory is. A fix renamed since its
    draft was made is the same fix where its Forwarded names the pull request pr.json records."""
    out_dir = Path(out_dir)
    held = _drafted_for(out_dir)
    if held is None or held == (draft.upstream, draft.name):
        return
    record_path = out_dir / "pr.json"
    recorded = _recorded_pull(record_path)
    own = _forwarded_pull(project.patch_path(draft.upstream, draft.name))
    if recorded is not None and own is not None and \
            (recorded[0][0].lower(), recorded[0][1]) == own:
        return
    try:
        body = (out_dir / "PR.md").read_bytes()
    except OSError:
        body = None
    edited = body is not None and hashlib.sha256(body).hexdigest() not in \
        set(_recorded_bodies(str(record_path))) - {None}
    if not edited and recorded is None:
        return
    upstream, name = held
    what = [] if not edited else [f"its PR.md, changed by hand (which would be sent as "
                                  f"{draft.upstream}/{draft.name}'s description)"]
    if recorded is not None:
        (repo, number), _ = recorded
        what.append(f"the record of its pull request {repo}#{number}")
    raise UsageError(
        f"{out_dir} holds the pull request draft of {upstream}/{name} (its pr.json), not of "
        f"{draft.upstream}/{draft.name}, with {' and '.join(what)}; nothing was written",
        hint=f"give each fix a directory of its own (`--out {out_dir / draft.stem}`), or leave "
             "--out out (the default is .patchforge/pr/<upstream>/<name>/)")


def out_paths(out_dir: Path, draft: Draft) -> dict[str, str]:
    out_dir = Path(out_dir)
    return {"patch": str(out_dir / draft.patch_file_name), "body": str(out_dir / "PR.md"),
            "json": str(out_dir / "pr.json")}


# A placeholder of the body's sections the patch could not fill (pr.body): still in the
# text, the section is still to be filled in.
UNFILLED_MARK = "fill in before opening._"


@record
class BodyOut:
    """PR.md after `write_out`: the text to send, and whether it is the user's."""
    text: str
    edited: bool  # PR.md was kept (changed by hand, or not known to be patchforge's), and sent
    new_draft: str | None  # where the regenerated draft went instead, when it changed too
    # What patchforge last wrote to PR.md (pr.json keeps it); None when that is not known.
    written_sha256: str | None
    # What went into PR.new.md (pr.json keeps it): a PR.md that is that draft, taken as it is,
    # is patchforge's as much as one written to PR.md.
    new_draft_sha256: str | None = None

    @property
    def origin(self) -> str:
        """"generated" (written now), "edited" (changed since patchforge wrote it) or
        "unknown" (kept, and pr.json records no digest of what was written: an older
        patchforge's, or none)."""
        if not self.edited:
            return "generated"
        return "edited" if self.written_sha256 is not None else "unknown"


def write_out(out_dir: Path, draft: Draft) -> tuple[dict[str, str], BodyOut]:
    """Write the format-patch file and PR.md into `out_dir` (each atomically); returns the
    paths of those and of pr.json (written by `write_record`), and the body.

    A PR.md changed by hand since patchforge wrote it (the tutorial's "fill in the parts it
    names, then run it again with --push --open") is kept and is the body sent: rewritten
    from the patch, the filled-in text was lost and the pull request opened with the
    placeholders. Where the regenerated draft differs from the one PR.md was made from (the
    patch changed since), it is written beside it as PR.new.md. A PR.md that is a draft
    patchforge wrote (to PR.md, or to PR.new.md and taken as it is) is rewritten. One that
    pr.json says nothing about (written by a patchforge that kept no digest) may hold the
    user's words: kept, the new draft beside it, and said as not known to be either."""
    paths = out_paths(out_dir, draft)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    atomic_write(paths["patch"], draft.format_patch)
    generated = draft.body_text.encode("utf-8")
    generated_sha = hashlib.sha256(generated).hexdigest()
    body_path = Path(paths["body"])
    new_draft_path = body_path.with_name("PR.new.md")
    try:
        current: bytes | None = body_path.read_bytes()
    except FileNotFoundError:
        current = None
    written, new_written = _recorded_bodies(paths["json"])
    current_sha = hashlib.sha256(current).hexdigest() if current is not None else None
    if current is None or current == generated or current_sha in {written, new_written} - {None}:
        atomic_write(body_path, generated)
        # A new draft written beside an edited PR.md earlier is superseded by PR.md itself.
        new_draft_path.unlink(missing_ok=True)
        return paths, BodyOut(draft.body_text, False, None, generated_sha)
    new_draft = None
    if written is None or written != generated_sha:
        new_draft = str(new_draft_path)
        atomic_write(new_draft, generated)
    return paths, BodyOut(current.decode("utf-8", "replace"), True, new_draft, written,
                          generated_sha if new_draft else new_written)


def _recorded_bodies(record_path: str) -> tuple[str | None, str | None]:
    """The sha256 of the PR.md and of the PR.new.md patchforge last wrote, from pr.json;
    None for one it does not record."""
    try:
        written = parse_json(Path(record_path).read_bytes())["written"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
    if not isinstance(written, dict):
        return None, None
    return tuple(value if isinstance(value, str) else None  # type: ignore[return-value]
                 for value in (written.get("body_sha256"), written.get("new_draft_sha256")))


def write_record(path: str | Path, document: dict) -> None:
    """pr.json: what was drafted, pushed and opened (rewritten after each step)."""
    atomic_write(path, (json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
                        + "\n").encode("utf-8"))


_REMOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def named_remote(root: Path, remote: str) -> str | None:
    """The push URL of `remote` when it is the name of a remote of the stack's own git
    repository (`git remote add fork git@github.com:me/vllm.git`, then `--push fork`, as
    `git push fork` takes it), and no path of that name is there: the push runs in the store,
    where that name meant nothing ("push remote fork: no such repository"). None otherwise:
    the argument is a URL or a path, as before."""
    if not _REMOTE_NAME.fullmatch(remote) or Path(remote).exists():
        return None
    proc = run_git("remote", "get-url", "--push", "--", remote, cwd=root, user_config=True,
                   ok=None)
    url = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not url or "\n" in url:
        return None
    return url


def fork_owner(remote: str) -> str | None:
    match = _FORK_OWNER.match(remote.strip())
    if not match:
        return None
    return match["owner"]


def push_branch(store: UpstreamStore, draft: Draft, remote: str) -> Pushed:
    """Force-push the draft's commit to `refs/heads/patchforge/<name>` of `remote`."""
    if draft.commit is None:
        raise UsageError(f"{draft.name}: nothing to push ({draft.state})")
    try:
        check_git_url(remote, "push remote")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if is_plain_path(remote):
        path = Path(remote)
        if not path.exists():
            raise UsageError(f"push remote {remote}: no such repository",
                             hint="name your fork by URL or by the path of a git repository")
        remote = str(path.resolve())
    refspec = f"+{draft.commit}:refs/heads/{draft.branch}"
    # The user's own git configuration is read: it holds what reaching their fork needs
    # (credential helpers, `url.*.insteadOf`, ssh settings).
    proc = run_git("push", "--quiet", "--no-verify", "--", remote, refspec,
                   git_dir=store.git_dir, user_config=True, ok=None)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        # git may quote the URL; never show a password or token that was part of it.
        err = err.replace(remote, _redact(remote))
        from patchforge.store.gitstore import remote_gave_no_answer

        failed = StoreError(f"pushing {draft.branch} to {_redact(remote)} failed: "
                            f"{err or 'exit ' + str(proc.returncode)}")
        # The fork gave no answer (the network, the host): exit 75, run it again later; a
        # refusal (a hook, a login) is an answer, exit 2.
        failed.gave_up = remote_gave_no_answer(err)
        raise failed
    return Pushed(_redact(remote), draft.branch, draft.commit)


NOT_ASKED = object()


def check_forge(forge, draft: Draft, owner: str):
    """Before anything is pushed: the forge repository is named, a token is there, and the
    forge answers (the open pull request from this branch, if any, which is returned). A push
    followed by a forge that cannot be reached would leave a branch and no pull request."""
    repo = _forge_repo(draft)
    if getattr(getattr(forge, "http", None), "token", "unknown") is None:
        raise UsageError("opening a pull request needs a forge token; nothing was pushed",
                         hint="set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`")
    return forge.find_open_pull(repo, f"{owner}:{draft.branch}")


def forwarded_pull_branch(project: Project, forge, draft: Draft, owner: str,
                          existing=None) -> str | None:
    """The head branch of the open pull request the patch's `Forwarded` names, when it is this
    fix's own on a branch other than patchforge/<name>: the fix was renamed since it was
    opened. Its updates go to that pull request; looked up by the new name alone, a second one
    was opened beside it (its review left behind) and Forwarded overwritten with the new one's
    address. `existing`: check_forge's answer for patchforge/<name> (the forge is not asked
    again about the pull request it is).

    Only a branch patchforge made (patchforge/<a name no other fix of the project has now),
    from `owner`'s fork: a pull request a person opened from a branch of their own (other
    commits on it) or another fix's is never force-pushed over. A pull request the forge does
    not have (a typo, one deleted) is none."""
    from patchforge.errors import NetworkError
    from patchforge.pr.draft import BRANCH_PREFIX

    # None: a mailing list's address, a bug tracker's: no pull request of ours.
    forwarded = _forwarded_pull(project.patch_path(draft.upstream, draft.name))
    repo = _forge_repo(draft)
    if forwarded is None or forwarded[0] != repo.lower() or existing is not None and \
            existing.number == forwarded[1]:
        return None
    try:
        pull = forge.pull_request(repo, forwarded[1])
    except NetworkError as exc:
        if getattr(exc, "status", None) == 404:
            return None
        raise
    if pull.state != "open" or pull.head_ref == draft.branch or \
            not pull.head_ref.startswith(BRANCH_PREFIX):
        return None
    stem = pull.head_ref[len(BRANCH_PREFIX):]
    # A fix that has that name now is a new one (it is refused that branch: it carries this
    # pull request, refuse_another_fixs_branch), unless its Forwarded names the same pull
    # request: then which fix it is cannot be told.
    for upstream in project.upstream_names():
        for name in project.patch_names(upstream):
            if name.removesuffix(".patch") == stem and \
                    _forwarded_pull(project.patch_path(upstream, name)) == forwarded:
                return None
    # Ours only when the fork's branch of that name has it open (head is owner:branch).
    mine = forge.find_open_pull(repo, f"{owner}:{pull.head_ref}")
    return pull.head_ref if mine is not None and mine.number == pull.number else None


def _forwarded_pull(path: Path) -> tuple[str, int] | None:
    """(repo, in lower case, and number) of the pull request the Forwarded of the patch at
    `path` names; None for none (`no`, a mailing list's address, a file that cannot be read:
    `status` names it)."""
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.net.forge import parse_pr_url
    from patchforge.project import read_no_link

    try:
        # Never through a link or from a FIFO (deleted/x.patch committed as a link to /dev/zero
        # ran `pr` out of memory); a fix set aside that does not parse claims nothing, where it
        # stopped `pr` of every other fix, exit 2, naming that file.
        forwarded = parse_patch_file(read_no_link(path), str(path)).get("Forwarded")
        ref = parse_pr_url((forwarded or "").strip())
    except (OSError, PatchforgeError):
        return None
    return ref.repo.lower(), ref.number


def _others_pulls(project: Project, draft: Draft) -> dict[tuple[str, int], str]:
    """(repo, number) -> the patch of another fix whose Forwarded names that pull request, for
    each one no Forwarded of `draft`'s own fix names (a pull request carried as two patches, or
    the same fix in two upstreams, is each one's own). Fixes set aside (deleted/, skipped/)
    claim theirs too: their pull requests may still be open. One landed (upstreamed/) does
    not: its pull request was merged, and the name is free again."""
    own_path = project.patch_path(draft.upstream, draft.name)
    own = _forwarded_pull(own_path)
    claims: dict[tuple[str, int], str] = {}
    for upstream in project.upstream_names():
        series = project.series_dir(upstream)
        paths = [project.patch_path(upstream, name) for name in project.patch_names(upstream)]
        for aside in ("deleted", "skipped"):
            paths += sorted((series / aside).glob("*.patch"))
        for path in paths:
            pull = _forwarded_pull(path) if path != own_path else None
            if pull is not None and pull != own:
                claims.setdefault(pull, str(path.relative_to(project.series_root)))
    return claims


def recorded_sent(out_dir: Path, draft: Draft) -> dict | None:
    """What the draft directory's pr.json says this fix's pull request is (`sent`: its
    address, the branch pushed for it, the description sent), kept across runs that open
    nothing (a dry run, a push alone); None without one."""
    try:
        document = parse_json(Path(out_paths(out_dir, draft)["json"]).read_bytes())
    except (OSError, ValueError):
        return None
    return _sent_of(document)


def _sent_of(document) -> dict | None:
    if not isinstance(document, dict):
        return None
    sent = document.get("sent")
    if isinstance(sent, dict) and isinstance(sent.get("url"), str):
        return sent
    pull, pushed = document.get("pull"), document.get("pushed")
    if isinstance(pull, dict) and isinstance(pull.get("url"), str):  # an older pr.json's
        branch = pushed.get("branch") if isinstance(pushed, dict) else None
        return {"url": pull["url"], "branch": branch, "body_sha256": pull.get("body_sha256")}
    return None


def _recorded_pull(record_path: Path) -> tuple[tuple[str, int], str | None] | None:
    """((repo, number), pushed branch) of the pull request a pr.json records; None for none."""
    from patchforge.net.forge import parse_pr_url

    try:
        sent = _sent_of(parse_json(record_path.read_bytes()))
        ref = parse_pr_url(str((sent or {}).get("url") or ""))
    except (OSError, ValueError, UsageError):
        return None
    branch = sent.get("branch") if sent else None
    return (ref.repo.lower(), ref.number), branch if isinstance(branch, str) else None


def branch_claim(project: Project, draft: Draft, existing=NOT_ASKED
                 ) -> tuple[tuple[str, int], str, bool] | None:
    """The pull request of another fix of the project that the branch this fix goes to
    carries: ((repo, number), the patch whose Forwarded names it, whether the forge said it is
    open), or None. A fix renamed after `pr --open` keeps its pull request on
    patchforge/<its old name>; a new fix given that old name pushed over it and updated that
    pull request with its own change (the other fix's review and its Forwarded then pointing
    at someone else's code). Known from any pr.json that recorded a push of this branch for a
    pull request another fix's Forwarded names (wherever the record is: a rename, or an older
    patchforge's directory, may have left it under this fix's name) and, with --open, from the
    forge's open pull request on the branch (`existing`). A pull request this fix's own
    Forwarded names is its own."""
    claims = _others_pulls(project, draft)
    if not claims:
        return None
    if existing is not NOT_ASKED and existing is not None:
        pull = (_forge_repo(draft).lower(), existing.number)
        if pull in claims:
            return pull, claims[pull], True
    # A branch of that name in the fork of another forge repository is another branch.
    repo = (draft.target.forge_repo or "").lower()
    for record_path in sorted((project.state_dir / "pr").glob("**/pr.json")):
        recorded = _recorded_pull(record_path)
        if recorded is not None and recorded[1] == draft.branch and recorded[0] in claims \
                and (not repo or recorded[0][0] == repo):
            return recorded[0], claims[recorded[0]], False
    return None


def refuse_another_fixs_branch(project: Project, draft: Draft, existing=NOT_ASKED, *,
                               forge=None, remote: str = "") -> str | None:
    """Before anything is pushed: the branch this fix goes to must not be the one another
    fix's pull request is open on (branch_claim). The forge (`forge`, when it has a token) is
    asked about a pull request known from a record alone: one it says is merged or closed no
    longer needs its branch, which this fix then takes (returned: what to say of it). Without
    a token to ask, or open, refused (UsageError, exit 2), saying how to go on. `remote`: the
    fork, as given to --push (named in the message)."""
    claim = branch_claim(project, draft, existing)
    if claim is None:
        return None
    (repo, number), owner, is_open = claim
    token = getattr(getattr(forge, "http", None), "token", None) if forge is not None else None
    if not is_open and token is not None:
        pull = forge.pull_request(_forge_repo(draft), number)
        if pull.state != "open":
            ended = "merged" if pull.merged else "closed"
            return (f"branch {draft.branch} carried pull request {repo}#{number} ({ended}), "
                    f"{owner}'s: the forge says it is {ended}, so "
                    f"{draft.upstream}/{draft.name} takes the branch")
        is_open = True
    rename = (f"`patchforge rename {draft.upstream}/{draft.stem} NEW`, then `patchforge pr "
              "NEW` again")
    if is_open:
        raise UsageError(
            f"branch {draft.branch} carries pull request {repo}#{number}, which is "
            f"{owner}'s (its Forwarded) and open on the forge: {draft.upstream}/{draft.name} "
            "would be pushed over it; nothing was pushed",
            hint=f"give this fix a name of its own: {rename}")
    raise UsageError(
        f"branch {draft.branch} carries pull request {repo}#{number}, which is {owner}'s "
        f"(its Forwarded): {draft.upstream}/{draft.name} would be pushed over it, and whether "
        "that pull request is still open cannot be asked without a forge token; nothing was "
        "pushed",
        hint=claim_hint(draft, repo, number, remote))


def claim_hint(draft: Draft, repo: str, number: int, remote: str) -> str:
    """What to do about a branch another fix's pull request was on, when the forge could not
    be asked whether it is still open."""
    import shlex

    again = f"`patchforge pr {draft.upstream}/{draft.stem} --push " \
        f"{shlex.quote(_redact(remote) if remote else 'REMOTE')}`"
    return (f"if {repo}#{number} is merged or closed, set GH_TOKEN or GITHUB_TOKEN (or `gh auth "
            f"login`) and run {again} again: the forge is asked, and this fix then takes the "
            f"branch; while it is open, give this fix a name of its own: `patchforge rename "
            f"{draft.upstream}/{draft.stem} NEW`, then `patchforge pr NEW`")


def _forge_repo(draft: Draft) -> str:
    repo = draft.target.forge_repo
    if not repo:
        raise UsageError(f"upstream {draft.upstream}: no forge repository to open the pull "
                         "request in",
                         hint=f"set `forge-repo = \"OWNER/NAME\"` under "
                              f"[tool.patchforge.upstreams.{draft.upstream}]")
    return repo


def open_or_update(forge, draft: Draft, owner: str, existing=NOT_ASKED, *,
                   body: str | None = None, last_sent: str | None = None) -> Opened:
    """The draft PR from `owner:patchforge/<name>`: updated when one is open, else opened.
    `existing` is check_forge()'s answer when it was asked before the push; `body` the text
    to send (PR.md as `write_out` left it; the draft's own body without it); `last_sent` the
    sha256 of the description this fix's last `pr --open` sent (pr.json).

    An open pull request whose description is not the one last sent (edited on the forge by
    its author or a reviewer, or sent by an earlier patchforge that kept no record) keeps it:
    only the title is updated, and `Opened.kept_description` says so. Sent over, the edits
    made there were lost."""
    repo = _forge_repo(draft)
    head = f"{owner}:{draft.branch}"
    body = draft.body_text if body is None else body
    if existing is NOT_ASKED:
        existing = forge.find_open_pull(repo, head)
    kept = False
    if existing is not None:
        there = existing.body
        kept = there is not None and there != body and \
            hashlib.sha256(there.encode("utf-8")).hexdigest() != last_sent
        pull = forge.update_pull(repo, existing.number, title=draft.title,
                                 body=None if kept else body)
        action = "updated"
    else:
        pull = forge.create_pull(repo, draft.title, body, head, draft.target.branch, draft=True)
        action = "opened"
    url = check_pull_url(pull.html_url or pull.url, repo, pull.number,
                         getattr(forge, "api_url", None), f"{draft.upstream}/{draft.name}",
                         getattr(forge, "web_host", None))
    return Opened(action, pull.number, url, repo, head, draft.target.branch, kept)


def check_pull_url(url: str, repo: str, number: int, api_url: str | None, patch: str,
                   web_host: str | None = None, hint: str | None = None) -> str:
    """The address to record for the pull request the forge answered about:
    `https://HOST/OWNER/REPO/pull/N`, made of the parts checked here, never the forge's text
    (whose `#fragment` or `?query` could hold control or invisible characters, which lint
    then refused in the patch's headers: the stack's CI broken by an answer nobody saw).
    Refused (NetworkError, exit 2, before the patch is written) when that URL is not the pull
    request it answered about: another repository or number (status would then follow that
    other pull request and say it merged; `hint` says what to do then, where the default,
    recording Forwarded by hand, is not the way on), not https, or a host other than the web host of
    the forge's API (net.forge.web_hosts: github.com for api.github.com, H for GitHub
    Enterprise's https://H/api/v3, `web_host` when configured)."""
    from patchforge.errors import NetworkError
    from patchforge.net.forge import parse_pr_url, web_hosts

    try:
        ref = parse_pr_url(url)
    except UsageError:
        ref = None
    hosts = web_hosts(api_url, web_host)
    if ref is None or not url.startswith("https://") or ref.repo.lower() != repo.lower() \
            or ref.number != number or ref.host not in hosts:
        expected = f"https://{sorted(hosts)[0]}/{repo}/pull/{number}"
        raise NetworkError(
            f"pull request {repo}#{number} is open, but the forge gave its address as {url!r}, "
            f"which is not that pull request: not recorded in {patch}",
            hint=hint or f"record `Forwarded: {expected}` by hand once you have checked it")
    # The owner and name as the forge spells them (compared without case above: each is one
    # of the configured repository's), the host in lower case.
    return ref.html_url


def record_submission(project: Project, upstream: str, file_name: str, url: str) -> bool:
    """Write `Forwarded: url` and `Upstream-Status: Submitted [url]` into the patch; True when
    the file changed. The file is read again under the lock, so a concurrent edit is not lost."""
    from patchforge.formats.patchfile import parse_patch_file

    path = project.patch_path(upstream, file_name)
    with RepoLock(project.state_dir, wait=5.0):
        data = path.read_bytes()
        patch = parse_patch_file(data, str(path))
        updated = patch.with_field("Forwarded", url).with_field("Upstream-Status",
                                                                f"Submitted [{url}]")
        new = updated.to_bytes()
        if new == data:
            return False
        from patchforge.ledger import record_event

        with writing_project(project.root):  # the patch and the history that records it
            atomic_write(path, new)
            record_event(project, {"event": "submitted", "upstream": upstream,
                                   "patch": file_name, "url": url})
        return True
