"""The forge API: pull requests (state, merge commit, drafts) and "compare", GitHub REST first.

`Forge` is the small interface the rest of patchforge uses (status asks whether a Forwarded PR
merged and whether a target includes its merge commit; pr opens a draft). `GitHubForge` speaks the
GitHub REST API, at api.github.com or a GitHub Enterprise `api-url`, through `HttpClient`, which
owns retries, rate limits, the ETag cache, offline mode and the token.
"""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from patchforge.errors import NetworkError, PatchforgeError, UsageError
from patchforge.model.record import field, record
from patchforge.names import is_forge_repo
from patchforge.net.http import HttpClient, Response, host_of

GITHUB_ACCEPT = "application/vnd.github+json"
GITHUB_API_VERSION = "2022-11-28"

# https://github.com/vllm-project/vllm/pull/56503 (any host: GitHub Enterprise too), with an
# optional trailing /files, /commits, #fragment or query. A number of at most 18 digits: one of
# more than 4300 was a ValueError of int() at every command reading the header.
_PR_URL_RE = re.compile(r"^https?://(?P<host>[^/\s]+)/(?P<owner>[^/\s]+)/(?P<name>[^/\s]+)"
                        r"/pull/(?P<number>[0-9]{1,18})(?:[/?#]\S*)?$")
# vllm-project/vllm#56503, as people write it in commit messages and PR bodies.
_PR_SHORT_RE = re.compile(r"^(?P<owner>[A-Za-z0-9][\w.-]*)/(?P<name>[\w.-]+)#(?P<number>[0-9]{1,18})$")
# A full commit id: SHA-1 (40 hex) or SHA-256 (64 hex).
_COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@record(frozen=True)
class PullRef:
    """Where a pull request lives: `host` is the web host (github.com), `repo` is owner/name."""

    host: str
    repo: str
    number: int

    @property
    def html_url(self) -> str:
        return f"https://{self.host}/{self.repo}/pull/{self.number}"


@record(frozen=True)
class PullRequest:
    number: int
    url: str  # the API URL
    html_url: str
    state: str  # "open" | "closed"
    merged: bool
    merge_commit_sha: str | None  # for a merged PR, the commit that landed on the base branch
    head_ref: str
    head_sha: str
    base_ref: str
    title: str
    draft: bool
    body: str | None = None  # the description, as the forge holds it now


@record(frozen=True)
class Comparison:
    """`head` compared with `base`: status is "ahead", "behind", "identical" or "diverged"."""

    status: str
    ahead_by: int
    behind_by: int

    @property
    def includes_base(self) -> bool:
        """True when head contains base (e.g. a target contains a PR's merge commit)."""
        return self.behind_by == 0


class Forge(Protocol):
    """What patchforge needs from a forge; GitHub first, others can follow."""

    def pull_request(self, repo: str, number: int) -> PullRequest: ...

    def compare(self, repo: str, base: str, head: str) -> Comparison: ...

    def find_open_pull(self, repo: str, head: str) -> PullRequest | None: ...

    def create_pull(self, repo: str, title: str, body: str, head: str, base: str,
                    draft: bool = True) -> PullRequest: ...

    def update_pull(self, repo: str, number: int, *, title: str | None = None,
                    body: str | None = None, base: str | None = None,
                    state: str | None = None) -> PullRequest: ...


def parse_pr_url(text: str) -> PullRef:
    """`https://github.com/o/r/pull/N` (any host) or `o/r#N` (github.com) -> PullRef."""
    text = text.strip()
    match = _PR_URL_RE.match(text)
    # `.` or `..` for OWNER or NAME is no repository: a step in the API's path.
    if match and not {match["owner"], match["name"]} & {".", ".."}:
        return PullRef(match["host"].lower(), f"{match['owner']}/{match['name']}",
                       int(match["number"]))
    match = _PR_SHORT_RE.match(text)
    if match and is_forge_repo(f"{match['owner']}/{match['name']}"):
        return PullRef("github.com", f"{match['owner']}/{match['name']}", int(match["number"]))
    raise UsageError(f"not a pull request URL: {text!r}",
                     hint="expected https://github.com/OWNER/REPO/pull/NUMBER or OWNER/REPO#NUMBER")


GITHUB_WEB_HOSTS = frozenset({"github.com", "www.github.com"})


def web_hosts(api_url: str | None, web_host: str | None = None) -> frozenset[str]:
    """The web hosts whose pull requests the forge API at `api_url` answers for: `web_host`
    when the configuration names one (`forge.web-host`); else github.com for api.github.com,
    H for GitHub Enterprise's https://H/api/v3, and github.com for an API elsewhere (a proxy
    in front of it, the usual case; one in front of a GitHub Enterprise names its host).

    An API elsewhere was taken to answer for any host: a GitHub Enterprise pull request was
    asked of a github.com proxy by its owner/name and number, and the answer was about another
    pull request."""
    if web_host:
        host = web_host.lower()
        return GITHUB_WEB_HOSTS if host in GITHUB_WEB_HOSTS else frozenset({host})
    parts = urlsplit(api_url or "")
    if parts.netloc and parts.hostname != "api.github.com" \
            and parts.path.rstrip("/").endswith("/api/v3"):
        return frozenset({parts.netloc.lower()})
    return GITHUB_WEB_HOSTS


def answers_for(forge: Any, ref: PullRef) -> bool:
    """Whether `forge` is the one to ask about `ref`: a pull request of another host is
    another forge's (its owner/name and number there name another pull request here)."""
    return ref.host in web_hosts(getattr(forge, "api_url", None), getattr(forge, "web_host", None))


def _check_repo(repo: str) -> str:
    if not is_forge_repo(repo):
        raise UsageError(f"not a forge repository name: {repo!r}", hint="expected OWNER/NAME")
    return repo


class GitHubForge:
    """The GitHub REST API (api.github.com or GitHub Enterprise) through an HttpClient."""

    def __init__(self, api_url: str, http: HttpClient, web_host: str | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.http = http
        self.web_host = web_host  # forge.web-host: see web_hosts

    @classmethod
    def from_config(cls, api_url: str, cache_dir: Path, *, offline: bool = False,
                    token_env: str | None = None, web_host: str | None = None,
                    **http_options: Any) -> "GitHubForge":
        """A forge whose token is bound to the API host and nowhere else: from `token_env` when
        given, else GH_TOKEN, GITHUB_TOKEN or `gh auth token` (net.credentials.forge_token)."""
        if token_env is None and "token" not in http_options:
            from patchforge.net.credentials import forge_token
            found = forge_token(api_url, offline=offline)
            if found is not None:
                http_options["token"] = found.value
        http = HttpClient(cache_dir, offline=offline, token_env=token_env,
                          token_host=host_of(api_url), **http_options)
        return cls(api_url, http, web_host)

    def __repr__(self) -> str:
        return f"GitHubForge({self.api_url!r})"

    # -- reads ----------------------------------------------------------------------------------
    def pull_request(self, repo: str, number: int) -> PullRequest:
        resp = self._call("GET", f"/repos/{_check_repo(repo)}/pulls/{int(number)}",
                          what=f"pull request {repo}#{number}")
        return _pull_from_json(resp.json(), resp.url, number=int(number))

    def compare(self, repo: str, base: str, head: str) -> Comparison:
        # per_page=1: we want the counts, not the commit list (up to 250 commits otherwise).
        path = (f"/repos/{_check_repo(repo)}/compare/{quote(base, safe='')}..."
                f"{quote(head, safe='')}?per_page=1")
        resp = self._call("GET", path, what=f"comparison of {base}...{head} in {repo}")
        doc = resp.json()
        fields: dict[str, Any] = doc if isinstance(doc, dict) else {}
        status: Any = fields.get("status")
        ahead: Any = fields.get("ahead_by")
        behind: Any = fields.get("behind_by")
        # Whether a target includes a merge is read from behind_by alone: only counts that
        # are numbers, and agree with the status, are believed (`false` and "0" counted as 0,
        # an included merge; "diverged" with nothing behind is no answer GitHub gives).
        counts = all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                     for n in (ahead, behind))
        agrees = counts and {"identical": ahead == 0 and behind == 0,
                             "ahead": ahead > 0 and behind == 0,
                             "behind": ahead == 0 and behind > 0,
                             "diverged": ahead > 0 and behind > 0}.get(status, False)
        if not agrees:
            raise NetworkError(f"GET {resp.url}: unexpected compare answer (status "
                               f"{str(status)[:20]!r}, ahead_by {str(ahead)[:20]!r}, behind_by "
                               f"{str(behind)[:20]!r})")
        return Comparison(status, ahead, behind)

    def find_open_pull(self, repo: str, head: str) -> PullRequest | None:
        """The open pull request from `head` ("user:branch"), or None.

        The listing is filtered by `head`, but GitHub answers a head whose owner it does not
        know with every open pull request, unfiltered: only one whose own head is `head` is
        taken (the first listed was someone else's, whose title and body were then rewritten
        and whose URL was recorded in the patch)."""
        url = (f"{self.api_url}/repos/{_check_repo(repo)}/pulls?state=open"
               f"&head={quote(head, safe=':')}&per_page=100")
        owner, _, branch = head.partition(":")
        for page in self.http.paginate(url, accept=GITHUB_ACCEPT, headers=self._headers()):
            for doc in _json_list(page):
                label = doc.get("head", {}).get("label") if isinstance(doc, dict) and \
                    isinstance(doc.get("head"), dict) else None
                their_owner, _, their_branch = str(label or "").partition(":")
                if their_owner.lower() == owner.lower() and their_branch == branch:
                    return _pull_from_json(doc, page.url)
        return None

    # -- writes ---------------------------------------------------------------------------------
    def create_pull(self, repo: str, title: str, body: str, head: str, base: str,
                    draft: bool = True) -> PullRequest:
        resp = self._call("POST", f"/repos/{_check_repo(repo)}/pulls",
                          what=f"opening a pull request from {head} in {repo}",
                          json_body={"title": title, "body": body, "head": head, "base": base,
                                     "draft": draft})
        return _pull_from_json(resp.json(), resp.url)

    def update_pull(self, repo: str, number: int, *, title: str | None = None,
                    body: str | None = None, base: str | None = None,
                    state: str | None = None) -> PullRequest:
        changes = {k: v for k, v in (("title", title), ("body", body), ("base", base),
                                     ("state", state)) if v is not None}
        resp = self._call("PATCH", f"/repos/{_check_repo(repo)}/pulls/{int(number)}",
                          what=f"updating pull request {repo}#{number}", json_body=changes)
        return _pull_from_json(resp.json(), resp.url, number=int(number))

    # -- plumbing -------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        return {"X-GitHub-Api-Version": GITHUB_API_VERSION}

    def _call(self, method: str, path: str, *, what: str, json_body: Any = None) -> Response:
        url = self.api_url + path
        resp = self.http.request(method, url, accept=GITHUB_ACCEPT, headers=self._headers(),
                                 json_body=json_body)
        if resp.ok:
            return resp
        hint = None
        if resp.status in (401, 403):
            hint = ("set GH_TOKEN or GITHUB_TOKEN (or `gh auth login`) to a token that can read "
                    "this repository" if self.http.token is None
                    else "check that the token (GH_TOKEN, GITHUB_TOKEN or gh's) is valid and allowed")
        elif resp.status == 404 and self.http.token is None:
            hint = "a private repository needs a token: GH_TOKEN, GITHUB_TOKEN or `gh auth login`"
        error = NetworkError(f"{what}: {host_of(url)} answered {resp.error_detail()}", hint=hint)
        error.status = resp.status  # a caller may take 404 as "none"
        raise error


def _json_list(resp: Response) -> list[dict[str, Any]]:
    doc = resp.json()
    if not isinstance(doc, list):
        raise NetworkError(f"GET {resp.url}: expected a JSON array")
    return doc


def _pull_from_json(doc: Any, url: str, *, number: int | None = None) -> PullRequest:
    """A pull request from the forge's JSON. Only what GitHub sends is believed: `merged` a
    boolean (the string "false" was taken for true), `state` open or closed, and, when a given
    pull request was asked for, an answer about that one (a proxy or cache in front of the forge
    that answers about another pull request had its merge taken for this one's)."""
    try:
        if not isinstance(doc, dict):
            raise TypeError(f"a JSON {type(doc).__name__}, not an object")
        answered = doc["number"]
        if isinstance(answered, bool) or not isinstance(answered, int):
            raise TypeError(f"number {str(answered)[:20]!r} is not a number")
        if number is not None and answered != number:
            raise NetworkError(f"{url}: the forge answered about pull request #{answered}, "
                               f"not #{number}; not believed")
        if doc.get("state") not in ("open", "closed"):
            raise TypeError(f"state {str(doc.get('state'))[:20]!r} is neither open nor closed")
        flag, merged_at = doc.get("merged"), doc.get("merged_at")
        if flag is not None and not isinstance(flag, bool):
            raise TypeError(f"merged {str(flag)[:20]!r} is not true or false")
        if merged_at is not None and not isinstance(merged_at, str):
            raise TypeError(f"merged_at {str(merged_at)[:20]!r} is not a time")
        merged = bool(flag or merged_at)
        # For an unmerged PR GitHub reports a throwaway test-merge commit: not a landing.
        merge_commit = (doc.get("merge_commit_sha") or None) if merged else None
        if merge_commit is not None and not (isinstance(merge_commit, str)
                                             and _COMMIT_ID.fullmatch(merge_commit)):
            # Whether the target includes the PR is counted from this commit: a name
            # (`HEAD`, a branch) or anything but a full commit id would count from elsewhere.
            raise NetworkError(f"{url}: unexpected pull request answer (merge_commit_sha "
                               f"{str(merge_commit)[:60]!r} is not a commit id)")
        return PullRequest(
            number=answered, url=str(doc.get("url") or url),
            html_url=str(doc.get("html_url") or ""), state=doc["state"], merged=merged,
            merge_commit_sha=merge_commit,
            head_ref=str(doc["head"]["ref"]), head_sha=str(doc["head"]["sha"]),
            base_ref=str(doc["base"]["ref"]), title=str(doc.get("title") or ""),
            draft=bool(doc.get("draft")),
            body=doc["body"] if isinstance(doc.get("body"), str) else None)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise NetworkError(f"{url}: unexpected pull request answer ({what})") from None



# One deadline for all the pull-request lookups of a command: a forge that answers slowly or not
# at all costs this much once, not a timeout per patch.
LOOKUP_DEADLINE = 20.0
LOOKUP_WORKERS = 8


@record
class PullLookups:
    """The answers of lookup_pulls: per PullRef a PullRequest or the error it gave, and, when the
    forge could not be reached at all, why (`unreachable`: the first connection failure)."""

    answers: dict[PullRef, "PullRequest | PatchforgeError"]
    unreachable: str | None = None
    # (repo, merge commit, target commit) -> the forge's Comparison or the error it gave: asked
    # ahead (forwarded.ask_forge_ahead) for a merged pull request the store cannot compare.
    compared: dict = field(default_factory=dict)


def lookup_pulls(forge, refs: list[PullRef], *, deadline: float = LOOKUP_DEADLINE,
                 workers: int = LOOKUP_WORKERS) -> PullLookups:
    """Ask the forge about every pull request at once, within one overall deadline.

    The first connection failure ends the wait: the forge is unreachable, and the lookups not yet
    answered are marked so instead of each waiting out its own retries. The worker threads belong
    to this call: at its end they take no more lookups, and they are daemons, so one still on a
    slow connection never holds the command's exit.
    """
    pending = list(dict.fromkeys(refs))
    answers: dict[PullRef, PullRequest | PatchforgeError] = {}
    done = threading.Condition()
    queue = list(pending)
    unreachable: list[str] = []  # the first connection failure, once there is one
    # An error no lookup should raise (a bug): raised by this thread, the caller's, at once.
    # A worker thread that died of it printed a bare traceback, and the command waited out
    # the whole deadline for its answer.
    broken: list[BaseException] = []

    def work() -> None:
        while True:
            with done:
                if not queue or unreachable or broken:
                    return
                ref = queue.pop(0)
            try:
                answer: PullRequest | PatchforgeError = forge.pull_request(ref.repo, ref.number)
            except PatchforgeError as exc:
                answer = exc
            except Exception as exc:
                with done:
                    broken.append(exc)
                    done.notify_all()
                return
            with done:
                answers[ref] = answer
                if isinstance(answer, NetworkError) and answer.unreachable and not unreachable:
                    unreachable.append(str(answer))
                done.notify_all()

    for _ in range(min(workers, len(pending))):
        threading.Thread(target=work, name="forge-lookup", daemon=True).start()
    end = time.monotonic() + deadline
    with done:
        while len(answers) < len(pending) and not unreachable and not broken:
            left = end - time.monotonic()
            if left <= 0:
                break
            done.wait(left)
        if broken:
            queue.clear()
            raise broken[0]
        # Past the deadline the workers ask nothing more: one with a request in flight ends
        # with it (the HTTP client bounds how long), and no worker outlives that.
        queue.clear()
        for ref in pending:
            if ref not in answers:
                answers[ref] = NetworkError(
                    f"pull request {ref.repo}#{ref.number}: "
                    + ("not asked, the forge is unreachable" if unreachable
                       else f"no answer within {deadline:.0f} s"))
        return PullLookups(dict(answers), unreachable[0] if unreachable else None)
