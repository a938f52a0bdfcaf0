"""GitHubForge against the test forge on 127.0.0.1: pulls, compare, drafts, errors, PR URLs."""
from __future__ import annotations

import pytest

from patchforge.errors import NetworkError, UsageError
from patchforge.net.forge import Comparison, GitHubForge, PullRef, parse_pr_url

MERGE = "d" * 40
TARGET = "eed1f3d0c6043bd494424a22443ee198dd56f657"


@pytest.fixture
def forge(forge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "tok123")
    monkeypatch.setenv("GITHUB_API_URL", forge_server.url)  # as GitHub Actions names its API
    forge_server.require_token = "tok123"
    return GitHubForge.from_config(forge_server.url, tmp_path / "cache", sleep=lambda s: None)


def test_merged_pull_request_and_compare_as_in_seed_000(forge, forge_server):
    forge_server.add_pull("vllm-project/vllm", 56503, state="closed", merged=True,
                          merge_commit_sha=MERGE, title="[ROCm] mHC delayed pre on AITER")
    forge_server.comparisons[("vllm-project/vllm", MERGE, TARGET)] = ("ahead", 11, 0)
    pull = forge.pull_request("vllm-project/vllm", 56503)
    assert (pull.number, pull.state, pull.merged, pull.merge_commit_sha) == \
        (56503, "closed", True, MERGE)
    assert pull.html_url == "https://github.com/vllm-project/vllm/pull/56503"
    cmp = forge.compare("vllm-project/vllm", pull.merge_commit_sha, TARGET)
    assert cmp == Comparison("ahead", 11, 0) and cmp.includes_base
    assert forge_server.requests[-1].path.endswith(f"/compare/{MERGE}...{TARGET}?per_page=1")
    assert forge_server.requests[-1].header("accept") == "application/vnd.github+json"


def test_open_pull_has_no_merge_commit(forge, forge_server):
    forge_server.add_pull("o/r", 3, merge_commit_sha="e" * 40)  # GitHub's test merge
    pull = forge.pull_request("o/r", 3)
    assert not pull.merged and pull.merge_commit_sha is None


def test_missing_pull_and_missing_token(forge, forge_server, tmp_path, monkeypatch):
    with pytest.raises(NetworkError, match=r"pull request o/r#9: 127\.0\.0\.1:\d+ answered 404 Not Found"):
        forge.pull_request("o/r", 9)
    monkeypatch.delenv("GITHUB_TOKEN")
    anonymous = GitHubForge.from_config(forge_server.url, tmp_path / "c2")
    with pytest.raises(NetworkError) as err:
        anonymous.pull_request("o/r", 9)
    assert "401" in err.value.message and "GITHUB_TOKEN" in err.value.hint


def test_find_open_pull_pages_through(forge, forge_server):
    for n in range(1, 5):
        forge_server.add_pull("o/r", n, head_ref=f"b{n}", head_label=f"me:b{n}" if n == 4 else None)
    forge_server.page_size = 2
    assert forge.find_open_pull("o/r", "me:b4").number == 4
    assert forge.find_open_pull("o/r", "me:nope") is None


def test_create_and_update_draft(forge, forge_server):
    pull = forge.create_pull("o/r", "[Bugfix] x", "body text", "me:fix-x", "main")
    assert pull.draft and pull.title == "[Bugfix] x" and pull.base_ref == "main"
    sent = forge_server.requests[-1]
    assert sent.method == "POST" and sent.header("authorization") == "Bearer tok123"
    assert b'"draft": true' in sent.body
    with pytest.raises(NetworkError, match="422 Unprocessable Entity .Validation Failed: A pull request already exists for me:fix-x"):
        forge.create_pull("o/r", "again", "", "me:fix-x", "main")
    updated = forge.update_pull("o/r", pull.number, title="[Bugfix] y")
    assert updated.title == "[Bugfix] y"
    assert forge_server.requests[-1].method == "PATCH"


def test_rate_limited_forge_is_retried(forge, forge_server):
    forge_server.add_pull("o/r", 1)
    forge_server.misbehave("status", status=429, headers={"Retry-After": "1"})
    assert forge.pull_request("o/r", 1).number == 1


def test_offline_forge_uses_cache(forge, forge_server, tmp_path):
    forge_server.add_pull("o/r", 1, state="closed", merged=True, merge_commit_sha=MERGE)
    forge.pull_request("o/r", 1)
    offline = GitHubForge.from_config(forge_server.url, tmp_path / "cache", offline=True)
    assert offline.pull_request("o/r", 1).merge_commit_sha == MERGE
    with pytest.raises(NetworkError, match="offline and no cached answer for GET"):
        offline.pull_request("o/r", 2)


def test_bad_repo_names_are_refused(forge):
    with pytest.raises(UsageError):
        forge.pull_request("../etc", 1)


@pytest.mark.parametrize("text,ref", [
    ("https://github.com/vllm-project/vllm/pull/56503",
     PullRef("github.com", "vllm-project/vllm", 56503)),
    ("https://github.com/ROCm/aiter/pull/12/files", PullRef("github.com", "ROCm/aiter", 12)),
    ("https://ghe.example.com/team/repo/pull/7#discussion", PullRef("ghe.example.com", "team/repo", 7)),
    ("vllm-project/vllm#56620", PullRef("github.com", "vllm-project/vllm", 56620)),
])
def test_parse_pr_url(text, ref):
    assert parse_pr_url(text) == ref
    assert ref.html_url.startswith("https://")


@pytest.mark.parametrize("text", ["https://github.com/o/r/issues/3", "o/r", "#12", ""])
def test_parse_pr_url_refuses(text):
    with pytest.raises(UsageError):
        parse_pr_url(text)
