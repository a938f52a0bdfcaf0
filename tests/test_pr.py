"""`patchforge pr`: a fix drafted as an upstream pull request, pushed to a fork, opened as a draft.

Everything is real: the upstream is a git repository built here (with a vLLM-like pull-request
template and a DCO file), the fork is a bare repository on disk, the forge is the test server on
127.0.0.1 (it records every request), and the CLI runs as a user runs it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.cli import CliResult, run_cli
from helpers.git import git

TEMPLATE = b"""<!-- markdownlint-disable -->
PLEASE FILL IN THE PR DESCRIPTION HERE ENSURING ALL CHECKLIST ITEMS (AT THE BOTTOM) HAVE BEEN CONSIDERED.

## Purpose

## Test Plan

## Test Result

## (Optional) Documentation Update

---
<details>
<summary> Essential Elements of an Effective PR Description Checklist </summary>

- [ ] The purpose of the PR, such as "Fix some issue (link existing issues this PR will resolve)".
- [ ] The test plan, such as providing test command.
- [ ] The test results, such as pasting the results comparison before and after, or e2e results
</details>

**BEFORE SUBMITTING, PLEASE READ <https://docs.example.org/contributing>** (anything written below this line will be removed by GitHub Actions)
"""

ATTN_V1 = b"".join(b"def helper_%d(x):\n    return x + %d\n\n\n" % (k, k) for k in range(12)) + \
    b"def select_backend(arch):\n    if arch == 'gfx942':\n        return 'triton'\n" \
    b"    return 'ck'\n"

# The fix, made against ATTN_V1: gfx950 must take the CK path too, and gfx942 keeps triton.
FIX_DIFF = b"""diff --git a/pkg/attn.py b/pkg/attn.py
--- a/pkg/attn.py
+++ b/pkg/attn.py
@@ -49,4 +49,6 @@ def helper_11(x):
 def select_backend(arch):
     if arch == 'gfx942':
         return 'triton'
+    if arch == 'gfx950':
+        return 'ck_a8w4'
     return 'ck'
"""

HEADER = (b"Description: attn: select the CK a8w4 experts on gfx950\n"
          b" On gfx950 the backend fell through to the generic CK kernel.\n"
          b"Author: Ada Lovelace <ada@example.com>\n"
          b"Author: Grace Hopper <grace@example.com>\n"
          b"Origin: other, https://github.com/acme/recipes/pull/962\n"
          b"Bug: https://github.com/acme/up/issues/77\n"
          b"Forwarded: no\n"
          b"Upstream-Status: Pending\n"
          b"X-Local-Note: kept byte for byte\n"
          b"Profiles: gfx950\n"
          b"Last-Update: 2026-09-12\n")

DESCRIPTION = (b"Plain aiter opens the full priority list, whose head is the Composable Kernel\n"
               b"backend, so the experts become the a8w4 family.\n"
               b"\n"
               b"Decode traces on MI355X TP4 at 131k context:\n"
               b"\n"
               b"concurrency\tMoE GEMM (ms/step)\twhole step\n"
               b"1\t2.72 \xe2\x86\x92 2.30\t\xe2\x88\x924.2%\n"
               b"16\t9.06 \xe2\x86\x92 7.18\t\xe2\x88\x928.7%\n"
               b"\n"
               b"Single-user decode measures 265 tok/s p50 against 259 tok/s before.\n")

PATCH = HEADER + b"\n" + DESCRIPTION + b"---\n" + FIX_DIFF


def _commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def stack(tmp_path, make_git_repo, forge_server, monkeypatch):
    """An upstream (pinned at its first commit, moved on since), a project carrying the fix, a
    bare fork, and the test forge as the configured API."""
    upstream, base = make_git_repo({".github/PULL_REQUEST_TEMPLATE.md": TEMPLATE,
                                    "DCO": b"Developer Certificate of Origin\n",
                                    "pkg/attn.py": ATTN_V1, "README.md": b"upstream\n"})
    # Upstream moves on: two lines above the fix, so it applies with an offset on the head.
    (upstream / "pkg/attn.py").write_bytes(b"import os\nimport sys\n" + ATTN_V1)
    head = _commit_all(upstream, "attn: imports")
    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream), str(fork))

    root = tmp_path / "stack"
    root.mkdir()
    result = run_cli(None, "init", str(root))
    assert result.rc == 0, result.text
    result = run_cli(root, "upstream", "add", "up", "--git", str(upstream),
                     "--at", base, "--follow", "main")
    assert result.rc == 0, result.text
    # The whole configuration, written here so the test does not depend on init's wording.
    (root / "patchforge.toml").write_text(
        '[profiles]\ngfx942 = "MI300X: CDNA3, FNUZ FP8"\ngfx950 = "MI355X: CDNA4, OCP FP8"\n\n'
        f'[forge]\napi-url = "{forge_server.url}"\n\n'
        f'[upstreams.up]\nkind = "git"\nurl = "{upstream}"\nfollow = "main"\n'
        'forge-repo = "acme/up"\n')
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "ck-a8w4-gfx950.patch").write_bytes(PATCH)
    (series / "series").write_bytes(b"ck-a8w4-gfx950.patch\n")
    # The API GitHub Actions names: a token from the environment goes there and nowhere else.
    monkeypatch.setenv("GITHUB_API_URL", forge_server.url)
    return {"root": root, "upstream": upstream, "base": base, "head": head, "fork": fork,
            "forge": forge_server, "patch": series / "ck-a8w4-gfx950.patch"}


def run_pr(stack, *args) -> CliResult:
    return run_cli(stack["root"], "pr", *args)


def show(repo: Path, fmt: str, rev: str) -> str:
    return git(repo, "--git-dir", str(repo), "log", "-1", f"--format={fmt}", rev)


def store_git(*args: str) -> str:
    from patchforge.store.gitstore import cache_dir
    return git(Path.cwd(), "--git-dir", str(cache_dir() / "store.git"), *args)


def fork_branches(fork: Path) -> dict[str, str]:
    out = git(fork, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/patchforge/")
    return dict(line.split(" ") for line in out.splitlines())


EXPECTED_MESSAGE = """attn: select the CK a8w4 experts on gfx950

On gfx950 the backend fell through to the generic CK kernel.

Plain aiter opens the full priority list, whose head is the Composable Kernel
backend, so the experts become the a8w4 family.

Decode traces on MI355X TP4 at 131k context:

concurrency\tMoE GEMM (ms/step)\twhole step
1\t2.72 \u2192 2.30\t\u22124.2%
16\t9.06 \u2192 7.18\t\u22128.7%

Single-user decode measures 265 tok/s p50 against 259 tok/s before.

Fixes: https://github.com/acme/up/issues/77
Co-authored-by: Grace Hopper <grace@example.com>
Signed-off-by: Test Committer <committer@example.com>
"""


def test_dry_run_drafts_commit_format_patch_and_body(stack, tmp_path):
    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 0, result.text
    doc = json.loads(result.stdout)
    assert doc["state"] == "ready" and doc["how"] == "offset" and doc["dry_run"] is True
    assert doc["onto"]["commit"] == stack["head"] and doc["onto"]["branch"] == "main"
    assert doc["signoff"] == "the upstream has a DCO file"
    commit = doc["commit"]

    # The commit: on the upstream head, the patch's authors, its Last-Update as the date.
    assert store_git("rev-parse", f"{commit}^") == stack["head"] + "\n"
    assert store_git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%aI", commit).strip() == \
        "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>|2026-09-12T00:00:00+00:00"
    assert store_git("log", "-1", "--format=%B", commit) == EXPECTED_MESSAGE + "\n"
    assert store_git("diff", "--name-only", stack["head"], commit) == "pkg/attn.py\n"

    # The format-patch file applies with git am on a clone of the upstream head, giving the
    # very same tree and message.
    out = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950"
    mail = out / "0001-ck-a8w4-gfx950.patch"
    assert doc["written"]["patch"] == str(mail)
    assert mail.read_bytes().startswith(f"From {commit} Mon Sep 17 00:00:00 2001\n".encode())
    assert b"\n-- \n" not in mail.read_bytes()  # no git-version signature
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(stack["upstream"]), str(clone))
    git(clone, "am", "-q", str(mail))
    assert git(clone, "rev-parse", "HEAD^{tree}") == store_git("rev-parse", f"{commit}^{{tree}}")
    assert git(clone, "log", "-1", "--format=%an <%ae>%n%B") == \
        "Ada Lovelace <ada@example.com>\n" + EXPECTED_MESSAGE + "\n"

    # The body fills the upstream's template and says what it could not fill.
    body = (out / "PR.md").read_text()
    assert doc["body"] == {"template": ".github/PULL_REQUEST_TEMPLATE.md",
                           "filled": ["Purpose", "Test Result", "(Optional) Documentation Update"],
                           "unfilled": ["Test Plan"], "notes": []}
    assert body.startswith("<!-- markdownlint-disable -->\n\n## Purpose\n\n"
                           "On gfx950 the backend fell through to the generic CK kernel.\n")
    assert "PLEASE FILL IN" not in body
    purpose = body.split("## Purpose")[1].split("## Test Plan")[0]
    assert "Fixes #77" in purpose
    assert "Origin: other, https://github.com/acme/recipes/pull/962" in purpose
    assert "tok/s" not in purpose  # measurements are in the test result, once
    plan = body.split("## Test Plan")[1].split("## Test Result")[0]
    assert "`gfx950` (MI355X: CDNA4, OCP FP8)" in plan and "gfx942" not in plan
    assert "is not recorded in the patch; fill in before opening" in plan
    assert f"`main` at {stack['head'][:12]} (applies with offset)" in plan
    result_part = body.split("## Test Result")[1].split("## (Optional)")[0]
    assert ("Decode traces on MI355X TP4 at 131k context:\n\n"
            "| concurrency | MoE GEMM (ms/step) | whole step |\n|---|---|---|\n"
            "| 1 | 2.72 \u2192 2.30 | \u22124.2% |\n") in result_part
    assert "265 tok/s p50 against 259 tok/s" in result_part
    assert "None: this change touches no documentation." in body
    # The template's checklist and closing line are kept as they are.
    assert TEMPLATE.decode().split("---\n", 1)[1] in body

    # A dry run: nothing left the machine, the patch file is untouched.
    assert fork_branches(stack["fork"]) == {}
    assert stack["forge"].requests == []
    assert stack["patch"].read_bytes() == PATCH
    record = json.loads((out / "pr.json").read_text())
    assert record["commit"] == commit and record["pushed"] is None

    # Drafting again gives the same commit and the same bytes.
    again = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert json.loads(again.stdout)["commit"] == commit
    assert mail.read_bytes() == (out / "0001-ck-a8w4-gfx950.patch").read_bytes()


def test_a_pull_request_opened_with_parts_to_fill_in_says_so(stack, monkeypatch):
    """`pr NAME --push FORK --open` in one go, the patch filling only some parts of the
    template: the run said "not filled from the patch (fill in before opening): Test Plan", then
    opened the draft pull request with those placeholders, as if it had not. It
    says now that the draft went out with them, and the ways to fill them in; a dry run still
    says to fill them in before opening."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-1")
    dry = run_pr(stack, "ck-a8w4-gfx950")
    assert dry.rc == 0 and "(fill in before opening): Test Plan" in dry.out, dry.text
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 0, result.text
    sent = json.loads([r for r in stack["forge"].requests if r.method == "POST"][-1].body)
    assert "fill in before opening._" in sent["body"]
    assert "fill in before opening" not in result.out, result.out
    assert ("not filled from the patch: Test Plan; the draft pull request was "
            "opened with them as placeholders: fill them in on the forge, or in PR.md and run "
            "this `patchforge pr` again") in result.out, result.out


def test_a_filled_in_pr_md_is_the_body_opened_and_is_never_rewritten(stack, monkeypatch):
    """The tutorial's way: draft, fill in the parts PR.md names, run again with --push --open.
    The second run rewrote PR.md from the patch (the filled-in text gone, no copy) and opened
    the pull request with the placeholders. A PR.md changed by hand is kept and sent; when the
    draft changes too (upstream moved on), the new draft goes beside it as PR.new.md and the
    update still sends the user's text. `--open` writes the URL into the patch, which the
    committed manifest pins: it says so, as the series commands do."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-1")
    assert run_pr(stack, "ck-a8w4-gfx950").rc == 0
    out = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950"
    body = out / "PR.md"
    filled = body.read_text().replace("## Test Plan\n", "## Test Plan\n\nRan the MoE suite on "
                                      "MI355X TP4.\n", 1)
    body.write_text(filled)
    (stack["root"] / "overlays").mkdir()
    (stack["root"] / "overlays/SHA256SUMS").write_text("")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 0, result.text
    assert body.read_text() == filled and "kept" in result.text
    assert "overlays/ was not regenerated" in result.text
    posts = [r for r in forge.requests if r.method == "POST"]
    assert json.loads(posts[-1].body)["body"] == filled
    assert not (out / "PR.new.md").exists()
    # Upstream moves on: the draft changes; the user's text is still what is sent.
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(b"# header\n" + attn.read_bytes())
    _commit_all(stack["upstream"], "attn: header")
    again = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                   "--fork-owner", "ada")
    assert again.rc == 0, again.text
    assert body.read_text() == filled and (out / "PR.new.md").is_file()
    assert "PR.new.md" in again.text
    patches = [r for r in forge.requests if r.method == "PATCH"]
    assert json.loads(patches[-1].body)["body"] == filled
    # Taking the new draft as it is makes PR.md patchforge's again (and PR.new.md goes).
    body.write_bytes((out / "PR.new.md").read_bytes())
    third = run_pr(stack, "ck-a8w4-gfx950")
    assert third.rc == 0 and "kept" not in third.text and not (out / "PR.new.md").exists()
    body.write_text(filled)
    assert "kept" in run_pr(stack, "ck-a8w4-gfx950").text


def _upstream_moves_on(stack, line: bytes) -> None:
    """A new upstream commit above the fix: the draft (its base) changes."""
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(line + attn.read_bytes())
    _commit_all(stack["upstream"], "attn: " + line.decode().strip("# \n"))


def drafted_by_an_older_patchforge(stack) -> tuple[Path, Path, bytes]:
    """A draft whose pr.json holds the paths alone (no digest of PR.md, as an older patchforge
    wrote it), then upstream moves on: (its directory, pr.json, PR.md as it was written)."""
    assert run_pr(stack, "ck-a8w4-gfx950").rc == 0
    out = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950"
    record = out / "pr.json"
    old = json.loads(record.read_text())
    old["written"] = {key: old["written"][key] for key in ("patch", "body", "json")}
    record.write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
    stale = (out / "PR.md").read_bytes()
    _upstream_moves_on(stack, b"# header\n")
    return out, record, stale


def test_a_pr_md_an_older_patchforge_wrote_is_said_as_unknown_and_never_stuck(stack):
    """pr.json written by a patchforge that kept no digest of PR.md (`written` holds the paths
    alone): the stale generated PR.md was "changed by hand since it was written", and from
    the next run on, with pr.json now holding the new draft's digest, it was kept as the
    user's for good and PR.new.md was no longer mentioned. It is kept (it may hold the user's
    words) and said as not known to be either, with the way to take the new draft, on every
    run until it is taken; taken, PR.md follows the patch again."""
    out, record, stale = drafted_by_an_older_patchforge(stack)
    for _ in range(2):
        run = run_pr(stack, "ck-a8w4-gfx950")
        assert run.rc == 0, run.text
        assert (out / "PR.md").read_bytes() == stale
        assert "does not record what patchforge wrote to it (an older patchforge wrote it)" \
            in run.out and "changed by hand since" not in run.out, run.out
        assert f"`mv {out / 'PR.new.md'} {out / 'PR.md'}`" in run.out, run.out
        assert (out / "PR.new.md").read_bytes() != stale
        assert json.loads(record.read_text())["written"]["body_origin"] == "unknown"
    (out / "PR.new.md").rename(out / "PR.md")
    _upstream_moves_on(stack, b"# another header\n")
    run = run_pr(stack, "ck-a8w4-gfx950")
    assert run.rc == 0 and "kept" not in run.out and not (out / "PR.new.md").exists(), run.out
    assert b"# another header" not in stale and (out / "PR.md").read_bytes() != stale


def test_a_new_draft_taken_as_it_is_follows_the_patch_again(stack):
    """PR.md filled in by hand, the draft changed (PR.new.md beside it), and the user took
    PR.new.md as it is, by a copy: when the draft changed again, PR.md (patchforge's own
    draft) was kept as hand-edited for good. It is rewritten, as a PR.md patchforge wrote."""
    assert run_pr(stack, "ck-a8w4-gfx950").rc == 0
    out = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950"
    body = out / "PR.md"
    body.write_text(body.read_text() + "\nFilled in by hand.\n")
    _upstream_moves_on(stack, b"# header\n")
    assert "kept" in run_pr(stack, "ck-a8w4-gfx950").out
    body.write_bytes((out / "PR.new.md").read_bytes())
    taken = body.read_bytes()
    _upstream_moves_on(stack, b"# another header\n")
    run = run_pr(stack, "ck-a8w4-gfx950")
    assert run.rc == 0 and "kept" not in run.out, run.out
    assert body.read_bytes() != taken and not (out / "PR.new.md").exists()
    # A copy changed by hand after it was taken is the user's again.
    body.write_text(body.read_text() + "\nMine.\n")
    _upstream_moves_on(stack, b"# a third header\n")
    assert "changed by hand" in run_pr(stack, "ck-a8w4-gfx950").out


def test_a_description_edited_on_the_forge_is_never_sent_over(stack, monkeypatch):
    """The author (or a reviewer) edits the pull request's description on the forge; the fix
    is re-sent with `pr --push --open` (upstream moved on). The update sent PR.md over the
    description, the edits lost. It is kept (only the title is updated) and the run says so;
    a description still as patchforge sent it is updated as before."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-1")
    args = ("--push", str(stack["fork"]), "--open", "--fork-owner", "ada")
    assert run_pr(stack, "ck-a8w4-gfx950", *args).rc == 0
    (pull,) = forge.pulls.values()
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(b"# header\n" + attn.read_bytes())
    _commit_all(stack["upstream"], "attn: header")
    updated = run_pr(stack, "ck-a8w4-gfx950", *args)
    assert updated.rc == 0 and "kept its description" not in updated.text, updated.text
    out = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950"
    assert pull["body"] == (out / "PR.md").read_text()
    pull["body"] = pull["body"] + "\n\nReviewer: please also run the fp8 suite.\n"
    edited = pull["body"]
    attn.write_bytes(b"# header 2\n" + attn.read_bytes())
    _commit_all(stack["upstream"], "attn: header 2")
    again = run_pr(stack, "ck-a8w4-gfx950", *args)
    assert again.rc == 0 and "kept its description" in again.text, again.text
    assert pull["body"] == edited
    patches = [json.loads(r.body) for r in forge.requests if r.method == "PATCH"]
    assert "body" not in patches[-1] and patches[-1]["title"]


def test_push_and_open_then_rerun_updates_the_same_pull_request(stack, monkeypatch):
    forge = stack["forge"]
    forge.require_token = "tok-3f9a1c77e2"
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 0, result.text
    assert "tok-3f9a1c77e2" not in result.text
    out = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950"
    record = json.loads((out / "pr.json").read_text())
    commit = record["commit"]

    # The branch is in the fork, at the drafted commit.
    assert fork_branches(stack["fork"]) == {"refs/heads/patchforge/ck-a8w4-gfx950": commit}

    # One lookup, then one draft PR opened from the fork's branch against main.
    posts = [r for r in forge.requests if r.method == "POST"]
    assert [r.path for r in posts] == ["/repos/acme/up/pulls"]
    sent = json.loads(posts[0].body)
    assert sent == {"title": "attn: select the CK a8w4 experts on gfx950",
                    "body": (out / "PR.md").read_text(), "head": "ada:patchforge/ck-a8w4-gfx950",
                    "base": "main", "draft": True}
    assert posts[0].header("authorization") == "Bearer tok-3f9a1c77e2"
    url = "https://github.com/acme/up/pull/1"
    assert record["pull"]["action"] == "opened" and record["pull"]["url"] == url
    assert f"opened draft pull request {url}" in result.text

    # The URL is recorded in the header; every other byte of the patch file is unchanged.
    expected = PATCH.replace(b"Forwarded: no\n", f"Forwarded: {url}\n".encode()).replace(
        b"Upstream-Status: Pending\n", f"Upstream-Status: Submitted [{url}]\n".encode())
    assert stack["patch"].read_bytes() == expected

    # Upstream moves on; re-running force-pushes the branch and updates the open PR.
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(b"# header\n" + attn.read_bytes())
    new_head = _commit_all(stack["upstream"], "attn: header")
    before = len(forge.requests)
    again = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                   "--fork-owner", "ada", "--json")
    assert again.rc == 0, again.output
    doc = json.loads(again.stdout)
    assert doc["onto"]["commit"] == new_head and doc["commit"] != commit
    assert fork_branches(stack["fork"]) == {"refs/heads/patchforge/ck-a8w4-gfx950": doc["commit"]}
    later = forge.requests[before:]
    assert [r.method for r in later] == ["GET", "PATCH"]
    assert later[1].path == "/repos/acme/up/pulls/1"
    assert json.loads(later[1].body)["title"] == "attn: select the CK a8w4 experts on gfx950"
    assert f"`main` at {new_head[:12]}" in json.loads(later[1].body)["body"]
    assert doc["pull"]["action"] == "updated" and doc["recorded"] is False
    assert len(forge.pulls) == 1
    assert stack["patch"].read_bytes() == expected


def test_push_takes_a_remote_of_the_stacks_repository_by_name(stack):
    """`git remote add fork ...` in the stack's checkout, then `pr NAME --push fork`, as
    `git push fork` takes it: refused, "push remote fork: no such repository" (the push runs
    in the store, where the name means nothing). The name is the remote's URL now; a path of
    that name, or a name no remote has, is as before."""
    root = stack["root"]
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "fork", str(stack["fork"]))
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", "fork")
    assert result.rc == 0, result.text
    record = json.loads((root / ".patchforge/pr/up/ck-a8w4-gfx950/pr.json").read_text())
    assert fork_branches(stack["fork"]) == {
        "refs/heads/patchforge/ck-a8w4-gfx950": record["commit"]}
    assert f"pushed patchforge/ck-a8w4-gfx950 to {stack['fork']}" in result.out, result.text
    missing = run_pr(stack, "ck-a8w4-gfx950", "--push", "nofork")
    assert missing.rc == 2 and "push remote nofork: no such repository" in missing.err, \
        missing.text


def test_a_renamed_fix_updates_the_pull_request_its_forwarded_names(stack, monkeypatch):
    """`pr FIX --push FORK --open`, then `rename FIX NEW`, then `pr NEW --push FORK --open`:
    the lookup by the new branch alone found nothing, so a second draft pull request was opened
    upstream from patchforge/NEW, the first (with its review) left open, and the patch's
    Forwarded overwritten with the second's address. The open pull request Forwarded names,
    from the fork's branch of the earlier name, is the fix's: its branch is pushed and it is
    updated."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    first = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                   "--fork-owner", "ada")
    assert first.rc == 0, first.text
    url = "https://github.com/acme/up/pull/1"
    assert run_cli(stack["root"], "rename", "ck-a8w4-gfx950", "ck-a8w4").rc == 0
    renamed = stack["root"] / "series/up/ck-a8w4.patch"
    before = renamed.read_bytes()
    assert f"Forwarded: {url}\n".encode() in before
    again = run_pr(stack, "ck-a8w4", "--push", str(stack["fork"]), "--open", "--fork-owner",
                   "ada", "--json")
    assert again.rc == 0, again.output
    doc = json.loads(again.stdout)
    assert doc["pull"]["action"] == "updated" and doc["pull"]["url"] == url, doc["pull"]
    assert doc["pushed"]["branch"] == "patchforge/ck-a8w4-gfx950"
    assert [r.path for r in forge.requests if r.method == "POST"] == ["/repos/acme/up/pulls"]
    assert len(forge.pulls) == 1
    assert set(fork_branches(stack["fork"])) == {"refs/heads/patchforge/ck-a8w4-gfx950"}
    assert renamed.read_bytes() == before
    # Once that pull request is closed, the fix's next one is its own, under its new name.
    forge.pulls[("acme/up", 1)]["state"] = "closed"
    third = run_pr(stack, "ck-a8w4", "--push", str(stack["fork"]), "--open", "--fork-owner",
                   "ada", "--json")
    assert third.rc == 0, third.output
    assert json.loads(third.stdout)["pull"]["head"] == "ada:patchforge/ck-a8w4"


def add_new_fix_under_the_old_name(root: Path, *series: str) -> None:
    """A new fix named ck-a8w4-gfx950 (another change to the same file) and the series
    listing `series`: what a user does after the fix of that name was renamed or deleted."""
    other = PATCH.replace(b"'ck_a8w4'", b"'ck_other'").replace(b"a8w4 experts", b"other experts")
    (root / "series/up/ck-a8w4-gfx950.patch").write_bytes(other)
    (root / "series/up/series").write_bytes("".join(f"{name}\n" for name in series).encode())


def test_a_new_fix_under_a_renamed_fixs_old_name_never_takes_its_pull_request(stack,
                                                                            monkeypatch):
    """`pr FIX --open`, `rename FIX NEW`, then a new fix named FIX: its `pr --push --open`
    force-pushed patchforge/FIX (the renamed fix's pull request's branch) and updated that
    pull request with its own change, and its PR.md was the renamed fix's. Now the renamed
    fix's drafts go with it, and the new fix is refused before anything is pushed, with or
    without --open, naming the pull request and whose it is."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    fork = str(stack["fork"])
    assert run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner",
                  "ada").rc == 0
    drafts = stack["root"] / ".patchforge/pr/up"
    (drafts / "ck-a8w4-gfx950/PR.md").write_text("## Purpose\nfilled in by hand\n")
    assert run_cli(stack["root"], "rename", "ck-a8w4-gfx950", "ck-a8w4").rc == 0
    assert (drafts / "ck-a8w4/PR.md").read_text() == "## Purpose\nfilled in by hand\n"
    assert not (drafts / "ck-a8w4-gfx950").exists()
    add_new_fix_under_the_old_name(stack["root"], "ck-a8w4.patch", "ck-a8w4-gfx950.patch")
    branches = fork_branches(stack["fork"])
    requests = len(forge.requests)
    for extra in ((), ("--open", "--fork-owner", "ada")):
        result = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, *extra)
        assert result.rc == 2, result.text
        assert "acme/up#1" in result.err and "up/ck-a8w4.patch" in result.err, result.err
        assert "nothing was pushed" in result.err and "patchforge rename" in result.err
        assert fork_branches(stack["fork"]) == branches
    # The forge asked (whether acme/up#1 is open), nothing sent to it.
    assert {r.method for r in forge.requests[requests:]} == {"GET"}
    assert "filled in by hand" not in (drafts / "ck-a8w4-gfx950/PR.md").read_text()
    # The renamed fix still updates its own pull request.
    again = run_pr(stack, "ck-a8w4", "--push", fork, "--open", "--fork-owner", "ada", "--json")
    assert again.rc == 0, again.output
    assert json.loads(again.stdout)["pull"]["url"] == "https://github.com/acme/up/pull/1"


def test_same_named_fixes_of_two_upstreams_draft_apart(stack):
    """Two upstreams each carrying a fix of the same name: both were drafted into
    .patchforge/pr/NAME/, so the second's `pr` took the first's filled-in PR.md for its own.
    Now each upstream has its drafts apart, and a directory an earlier patchforge kept at
    .patchforge/pr/NAME/ is taken by the fix its pr.json names."""
    root = stack["root"]
    legacy = root / ".patchforge/pr/ck-a8w4-gfx950"
    legacy.mkdir(parents=True)
    (legacy / "PR.md").write_text("kept from before\n")
    (legacy / "pr.json").write_text(json.dumps({"upstream": "up",
                                                "patch": "ck-a8w4-gfx950.patch"}))
    assert run_pr(stack, "up/ck-a8w4-gfx950").rc == 0
    assert (root / ".patchforge/pr/up/ck-a8w4-gfx950/PR.md").read_text() == "kept from before\n"
    assert not legacy.exists()
    result = run_cli(root, "upstream", "add", "up2", "--git", str(stack["upstream"]),
                     "--at", stack["base"], "--follow", "main")
    assert result.rc == 0, result.text
    with (root / "patchforge.toml").open("a") as config:
        config.write('forge-repo = "acme/up2"\n')
    (root / "series/up2").mkdir(parents=True, exist_ok=True)
    (root / "series/up2/ck-a8w4-gfx950.patch").write_bytes(PATCH)
    (root / "series/up2/series").write_bytes(b"ck-a8w4-gfx950.patch\n")
    result = run_pr(stack, "up2/ck-a8w4-gfx950")
    assert result.rc == 0, result.text
    assert "kept from before" not in (root / ".patchforge/pr/up2/ck-a8w4-gfx950/PR.md").read_text()
    assert (root / ".patchforge/pr/up/ck-a8w4-gfx950/PR.md").read_text() == "kept from before\n"


def test_an_older_drafts_directory_of_a_renamed_fix_never_goes_to_a_new_fix_of_its_name(stack, monkeypatch):
    """A project whose drafts an older patchforge kept at .patchforge/pr/<name>/: `pr OLD --open`,
    then `rename OLD NEW` (older patchforge: the directory stays at pr/OLD/), then a new fix named
    OLD. Its `pr OLD --push` must not push over patchforge/OLD, the branch of NEW's pull request,
    nor take NEW's filled-in PR.md."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    root, fork = stack["root"], str(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada")
    assert r.rc == 0, r.text
    new_dir = root / ".patchforge/pr/up/ck-a8w4-gfx950"
    (new_dir / "PR.md").write_text("## Purpose\nfilled in by hand\n")
    # What an older patchforge left: the drafts at .patchforge/pr/<name>/.
    legacy = root / ".patchforge/pr/ck-a8w4-gfx950"
    new_dir.rename(legacy)
    assert run_cli(root, "rename", "ck-a8w4-gfx950", "ck-a8w4").rc == 0
    add_new_fix_under_the_old_name(root, "ck-a8w4.patch", "ck-a8w4-gfx950.patch")
    branches = fork_branches(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork)
    took = (root / ".patchforge/pr/up/ck-a8w4-gfx950/PR.md")
    assert fork_branches(stack["fork"]) == branches, "pushed over the renamed fix's PR branch"
    assert r.rc == 2
    assert not (took.exists() and "filled in by hand" in took.read_text()), \
        "the new fix took the renamed fix's PR.md"


def test_a_pull_request_two_patches_are_forwarded_to_is_each_ones_own(stack, monkeypatch):
    """Two patches of the series forwarded as one upstream pull request (one PR of two commits is
    carried as two patches; the second's Forwarded names the PR the first opened). Updating the
    first fix's own pull request must not be refused as "another fix's"."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    root, fork = stack["root"], str(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada", "--json")
    assert r.rc == 0, r.text
    url = json.loads(r.stdout)["pull"]["url"]
    # A second patch of the same upstream PR (a README change), forwarded to the same PR.
    companion = (b"Description: readme: say gfx950 takes CK a8w4\n"
                 b"Author: Ada Lovelace <ada@example.com>\n"
                 b"Forwarded: " + url.encode() + b"\n"
                 b"Upstream-Status: Submitted [" + url.encode() + b"]\n---\n"
                 b"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
                 b"@@ -1 +1,2 @@\n upstream\n+gfx950: CK a8w4\n")
    (root / "series/up/readme-gfx950.patch").write_bytes(companion)
    (root / "series/up/series").write_bytes(b"ck-a8w4-gfx950.patch\nreadme-gfx950.patch\n")
    # The first fix's pull request is updated (its Forwarded names it, it opened it).
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada")
    assert r.rc == 0, "its own pull request refused as another fix's"


def test_a_dry_run_of_a_renamed_fix_keeps_its_branch_taken(stack, monkeypatch):
    """`pr FIX --open`, `rename FIX NEW`, `pr NEW` (a dry-run look at the draft: pr.json is written
    again, with no pushed branch or pull request), then a new fix named FIX: its `pr FIX --push`
    must not force-push patchforge/FIX, the branch NEW's pull request is on."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    root, fork = stack["root"], str(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada")
    assert r.rc == 0, r.text
    assert run_cli(root, "rename", "ck-a8w4-gfx950", "ck-a8w4").rc == 0
    r = run_pr(stack, "ck-a8w4")          # look at the renamed fix's draft: a dry run
    assert r.rc == 0, r.text
    add_new_fix_under_the_old_name(root, "ck-a8w4.patch", "ck-a8w4-gfx950.patch")
    branches = fork_branches(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork)
    assert fork_branches(stack["fork"]) == branches, \
        "force-pushed patchforge/ck-a8w4-gfx950, the branch of ck-a8w4's pull request"
    assert r.rc == 2


def test_a_new_fix_under_a_deleted_fixs_name_never_takes_its_pull_request(stack, monkeypatch):
    """`pr FIX --push --open` (acme/up#1 open, under review), `delete FIX` (kept under deleted/ with
    its Forwarded), later a new, different fix named FIX: `pr FIX --push --open` must not push
    over patchforge/FIX nor update acme/up#1 with the new fix's change."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    root, fork = stack["root"], str(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada")
    assert r.rc == 0, r.text
    r = run_cli(root, "delete", "ck-a8w4-gfx950")
    assert r.rc == 0, r.text
    add_new_fix_under_the_old_name(root, "ck-a8w4-gfx950.patch")
    branches = fork_branches(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada", "--json")
    assert fork_branches(stack["fork"]) == branches, \
        "force-pushed the deleted fix's pull request branch"
    assert r.rc == 2


@pytest.mark.parametrize("ended", ["merged", "closed"])
def test_a_deleted_fixs_name_is_free_again_once_the_forge_says_its_pull_request_ended(
        stack, monkeypatch, ended):
    """`pr FIX --push --open` (acme/up#1), `delete FIX`, acme/up#1 then merged (or closed), and a
    new fix named FIX: its `pr FIX --push` was refused until renamed, whatever the forge said of
    acme/up#1. Now the forge is asked: an ended pull request leaves the branch to the new fix,
    which pushes it and opens acme/up#2. With no token to ask, it is still refused, and the
    message says how to let the forge be asked and how to rename; a dry run says the same of
    the push to come."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    root, fork = stack["root"], str(stack["fork"])
    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada")
    assert r.rc == 0, r.text
    assert run_cli(root, "delete", "ck-a8w4-gfx950").rc == 0
    forge.pulls["acme/up", 1].update(state="closed", merged=ended == "merged")
    add_new_fix_under_the_old_name(root, "ck-a8w4-gfx950.patch")
    branches = fork_branches(stack["fork"])

    # No token: the forge cannot be asked, so the branch stays taken, and the way is said.
    with monkeypatch.context() as env:
        env.delenv("GITHUB_TOKEN")
        env.delenv("GH_TOKEN", raising=False)
        env.setenv("PATH", "/usr/bin:/bin")  # (git, and no `gh` to give a token either)
        r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork)
        assert r.rc == 2, r.text
        assert "acme/up#1" in r.err and "deleted/ck-a8w4-gfx950.patch" in r.err, r.err
        assert "GITHUB_TOKEN" in r.err and f"patchforge pr up/ck-a8w4-gfx950 --push {fork}" in \
            r.err and "patchforge rename up/ck-a8w4-gfx950" in r.err, r.err
        assert fork_branches(stack["fork"]) == branches
        r = run_pr(stack, "ck-a8w4-gfx950")  # the dry run says what the push will meet
        assert r.rc == 0, r.text
        assert "acme/up#1" in r.err and "GITHUB_TOKEN" in r.err, r.err

    r = run_pr(stack, "ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada",
               "--json")
    assert r.rc == 0, r.text
    doc = json.loads(r.stdout)
    assert doc["pull"]["action"] == "opened" and doc["pull"]["number"] == 2, doc["pull"]
    assert f"acme/up#1, {ended}" in r.err or f"acme/up#1 ({ended})" in r.err, r.err
    branch = "refs/heads/patchforge/ck-a8w4-gfx950"
    assert fork_branches(stack["fork"])[branch] != branches[branch]
    assert b"Forwarded: https://github.com/acme/up/pull/2" in \
        (root / "series/up/ck-a8w4-gfx950.patch").read_bytes()
    assert forge.pulls["acme/up", 1]["state"] == "closed"  # the ended one left alone


def test_a_same_named_fix_of_another_forge_repository_pushes_to_its_own_fork(stack, monkeypatch):
    """Two upstreams of different forge repositories (acme/up, acme/up2), each with a fix of the same
    name. up/FIX's pull request is open (acme/up#1, from fork of up). Pushing up2/FIX to *its own*
    fork (of acme/up2) must not be refused as "branch patchforge/FIX carries acme/up#1": that branch
    is in another repository's fork."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    root, fork = stack["root"], str(stack["fork"])
    r = run_pr(stack, "up/ck-a8w4-gfx950", "--push", fork, "--open", "--fork-owner", "ada")
    assert r.rc == 0, r.text
    result = run_cli(root, "upstream", "add", "up2", "--git", str(stack["upstream"]),
                     "--at", stack["base"], "--follow", "main")
    assert result.rc == 0, result.text
    with (root / "patchforge.toml").open("a") as config:
        config.write('forge-repo = "acme/up2"\n')
    (root / "series/up2").mkdir(parents=True, exist_ok=True)
    (root / "series/up2/ck-a8w4-gfx950.patch").write_bytes(PATCH)
    (root / "series/up2/series").write_bytes(b"ck-a8w4-gfx950.patch\n")
    fork2 = root.parent / "fork2.git"
    git(root.parent, "clone", "-q", "--bare", str(stack["upstream"]), str(fork2))
    r = run_pr(stack, "up2/ck-a8w4-gfx950", "--push", str(fork2))
    assert r.rc == 0, "refused: another repository's pull request named for a branch of this fork"
    assert "refs/heads/patchforge/ck-a8w4-gfx950" in fork_branches(fork2)


def test_forwarded_naming_a_hand_made_or_missing_pull_request_is_not_taken_over(stack,
                                                                                monkeypatch):
    """The lookup of the pull request `Forwarded` names (a renamed fix's) takes only a branch
    patchforge made: a pull request a person opened from a branch of their own (other commits
    on it) had that branch force-pushed over with the fix's one commit and its title and body
    replaced; and one the forge does not have (a typo, deleted) failed the run, exit 2, where
    the fix's own pull request is opened."""
    forge, fork = stack["forge"], stack["fork"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    work = stack["root"].parent / "work"
    git(stack["root"].parent, "clone", "-q", str(fork), str(work))
    (work / "OTHER.md").write_text("other work\n")
    git(work, "add", "-A")
    git(work, "-c", "user.name=a", "-c", "user.email=a@e", "commit", "-q", "-m", "other work")
    git(work, "push", "-q", "origin", "HEAD:refs/heads/rocm-fixes")
    theirs = show(fork, "%H", "refs/heads/rocm-fixes")
    forge.add_pull("acme/up", 5, head_ref="rocm-fixes", head_label="ada:rocm-fixes",
                   title="ROCm fixes (several)")
    patch = stack["patch"]
    original = patch.read_bytes()
    for number in (5, 999):
        patch.write_bytes(original.replace(
            b"Forwarded: no\n", f"Forwarded: https://github.com/acme/up/pull/{number}\n".encode()))
        result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(fork), "--open", "--fork-owner",
                        "ada", "--json")
        assert result.rc == 0, result.output
        assert json.loads(result.stdout)["pull"]["head"] == "ada:patchforge/ck-a8w4-gfx950"
        assert show(fork, "%H", "refs/heads/rocm-fixes") == theirs
        assert not [r for r in forge.requests if r.method == "PATCH" and "/pulls/5" in r.path]


def test_a_conflict_is_reported_and_nothing_is_written_or_pushed(stack):
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(attn.read_bytes().replace(b"    return 'ck'\n",
                                               b"    return 'ck_default'\n"))
    _commit_all(stack["upstream"], "attn: rename the default")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 1
    assert "conflict in pkg/attn.py" in result.err
    assert "nothing was written or pushed" in result.err
    # The way on moves the series onto that base (`edit`, which it named, opens the fix on
    # the pinned base, where it applies: nothing to resolve there).
    assert "`patchforge rebase --to " in result.err and "patchforge edit" not in result.err
    assert fork_branches(stack["fork"]) == {}
    assert stack["forge"].requests == []
    assert not (stack["root"] / ".patchforge" / "pr").exists()
    assert stack["patch"].read_bytes() == PATCH
    doc = json.loads(run_pr(stack, "ck-a8w4-gfx950", "--json").stdout)
    assert doc["state"] == "conflict" and doc["files"] == ["pkg/attn.py"]
    assert doc["commit"] is None


def test_a_fix_already_upstream_stops_with_where_it_landed(stack):
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(attn.read_bytes().replace(
        b"        return 'triton'\n", b"        return 'triton'\n    if arch == 'gfx950':\n"
        b"        return 'ck_a8w4'\n"))
    landed = _commit_all(stack["upstream"], "attn: gfx950 takes ck_a8w4 (upstream's own fix)")
    (stack["upstream"] / "README.md").write_bytes(b"later\n")
    _commit_all(stack["upstream"], "readme")
    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 1
    doc = json.loads(result.stdout)
    assert doc["state"] == "upstreamed" and doc["landed_in"] == landed
    assert not (stack["root"] / ".patchforge" / "pr").exists()
    text = run_pr(stack, "ck-a8w4-gfx950")
    assert text.rc == 1 and "already upstream" in text.err


def test_a_moved_context_is_carried_by_a_three_way_merge(stack):
    attn = stack["upstream"] / "pkg/attn.py"
    attn.write_bytes(attn.read_bytes().replace(b"def select_backend(arch):\n",
                                               b"def select_backend(arch, default=None):\n"))
    head = _commit_all(stack["upstream"], "attn: a default")
    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 0, result.text
    doc = json.loads(result.stdout)
    assert doc["how"] == "merged" and doc["onto"]["commit"] == head
    content = store_git("show", f"{doc['commit']}:pkg/attn.py")
    assert content.endswith("def select_backend(arch, default=None):\n    if arch == 'gfx942':\n"
                            "        return 'triton'\n    if arch == 'gfx950':\n"
                            "        return 'ck_a8w4'\n    return 'ck'\n")


def test_onto_a_branch_makes_it_the_base(stack):
    git(stack["upstream"], "branch", "release-1", stack["base"])
    result = run_pr(stack, "ck-a8w4-gfx950", "--onto", "release-1", "--json")
    assert result.rc == 0, result.text
    doc = json.loads(result.stdout)
    assert doc["onto"] | {"url": None} == {"branch": "release-1", "commit": stack["base"],
                                           "forge_repo": "acme/up", "ref": "release-1",
                                           "url": None}
    assert doc["how"] == "applies"


def test_open_needs_push_and_a_fork_owner(stack):
    result = run_pr(stack, "ck-a8w4-gfx950", "--open")
    assert result.rc == 2 and "--open needs --push" in result.text
    result = run_pr(stack, "ck-a8w4-gfx950", "--open", "--push", str(stack["fork"]))
    assert result.rc == 2 and "--fork-owner" in result.text
    assert stack["forge"].requests == []
    result = run_cli(stack["root"], "--offline", "pr", "ck-a8w4-gfx950",
                     "--push", str(stack["fork"]))
    assert result.rc == 2 and "would leave this machine" in result.text
    assert fork_branches(stack["fork"]) == {}


def test_dry_run_said_aloud_is_the_draft_and_never_goes_with_push(stack):
    """`pr NAME --dry-run`, as `rebase` and `bump` take it and as the draft's own last line
    says ("dry run: nothing left this machine"): "No such option: --dry-run", exit 2, no
    draft. It is the draft (the default, said aloud); with --push or --open, which would
    leave the machine, it is refused before anything is drafted, pushed or opened."""
    out = stack["root"] / ".patchforge/pr/up/ck-a8w4-gfx950"
    result = run_pr(stack, "ck-a8w4-gfx950", "--dry-run")
    assert result.rc == 0, result.text
    assert "dry run: nothing left this machine" in result.out, result.text
    assert (out / "PR.md").is_file() and (out / "0001-ck-a8w4-gfx950.patch").is_file()
    assert json.loads((out / "pr.json").read_text())["dry_run"] is True
    shutil.rmtree(out)
    for sent in (["--push", str(stack["fork"])], ["--push", str(stack["fork"]), "--open"]):
        result = run_pr(stack, "ck-a8w4-gfx950", "--dry-run", *sent)
        assert result.rc == 2, result.text
        assert "--dry-run drafts only: --push and --open would leave this machine" in \
            result.err, result.text
        assert not out.exists()
    assert fork_branches(stack["fork"]) == {} and stack["forge"].requests == []
    assert stack["patch"].read_bytes() == PATCH


def test_a_fix_by_the_placeholder_author_is_never_sent_upstream(stack, monkeypatch):
    """A fix made where git had no identity (a fresh machine: `new` and the imports write
    `Author: Unknown <unknown@localhost>`, and say so once in a note) went out with `pr --push
    --open` as a commit by no one, without a word. The dry run says so in a `note:` naming the
    patch file's line, `--push` and `--open` are refused (exit 2, nothing drafted, pushed or
    opened), and once the line names the person, the push goes."""
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    stack["patch"].write_bytes(PATCH.replace(b"Author: Ada Lovelace <ada@example.com>\n",
                                             b"Author: Unknown <unknown@localhost>\n"))
    out = stack["root"] / ".patchforge/pr/up/ck-a8w4-gfx950"
    said = "series/up/ck-a8w4-gfx950.patch:3: the fix's Author is Unknown <unknown@localhost>"
    dry = run_pr(stack, "ck-a8w4-gfx950")
    assert dry.rc == 0 and said in dry.err, dry.text
    assert "`--push` and `--open` are refused while it is" in dry.err, dry.text
    shutil.rmtree(out)
    for sent in (["--push", str(stack["fork"])],
                 ["--push", str(stack["fork"]), "--open", "--fork-owner", "me"]):
        result = run_pr(stack, "ck-a8w4-gfx950", *sent)
        assert result.rc == 2 and said in result.err, result.text
        assert "nothing was drafted, pushed or opened" in result.err, result.text
        assert not out.exists()
    assert fork_branches(stack["fork"]) == {} and stack["forge"].requests == []

    # The mirror: the person named, nothing said, and the push goes.
    stack["patch"].write_bytes(PATCH)
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]))
    assert result.rc == 0 and "Author is" not in result.err, result.text
    assert list(fork_branches(stack["fork"])) == ["refs/heads/patchforge/ck-a8w4-gfx950"]


def test_a_directory_upstream_needs_a_git_url_and_then_uses_it(tmp_path, make_git_repo):
    """A wheel or directory upstream has no history: its table names a `git-url` for PRs. No
    template upstream: a plain body; no DCO: no Signed-off-by unless `signoff = true`."""
    upstream, _ = make_git_repo({"pkg/attn.py": ATTN_V1})
    installed = tmp_path / "site-packages"
    (installed / "pkg").mkdir(parents=True)
    (installed / "pkg/attn.py").write_bytes(ATTN_V1)
    root = tmp_path / "stack"
    assert run_cli(None, "init", str(root)).rc == 0
    result = run_cli(root, "upstream", "add", "site", "--dir", str(installed),
                     "--at", "installed")
    assert result.rc == 0, result.text
    config = root / "patchforge.toml"
    config.write_text(f'[upstreams.site]\nkind = "dir"\npath = "{installed}"\n')
    (root / "series" / "site").mkdir(parents=True)
    (root / "series" / "site" / "fix.patch").write_bytes(
        b"Description: attn: gfx950 takes ck_a8w4\nAuthor: Ada Lovelace <ada@example.com>\n"
        b"Last-Update: 2026-01-02\n\n---\n" + FIX_DIFF)
    (root / "series" / "site" / "series").write_bytes(b"fix.patch\n")
    result = run_cli(root, "pr", "fix")
    assert result.rc == 2
    assert "no history" in result.text and "git-url" in result.text

    config.write_text(config.read_text() + f'git-url = "{upstream}"\n')
    result = run_cli(root, "pr", "fix", "--json")
    assert result.rc == 0, result.text
    doc = json.loads(result.stdout)
    assert doc["trailers"] == [] and doc["signoff"] is None and doc["how"] == "applies"
    assert doc["body"]["template"] is None
    assert doc["body"]["unfilled"] == ["Test Plan", "Test Result"]
    body = Path(doc["written"]["body"]).read_text()
    assert body.startswith("## Purpose\n\nattn: gfx950 takes ck_a8w4.\n\n## Test Plan\n")
    assert "No measured results are recorded" in body

    config.write_text(config.read_text() + "signoff = true\n")
    doc = json.loads(run_cli(root, "pr", "fix", "--json").out)
    assert doc["trailers"] == ["Signed-off-by: Test Committer <committer@example.com>"]
    assert doc["signoff"] == "configuration (signoff = true)"


def test_the_sign_off_is_the_submitters_never_the_authors(tmp_path, make_git_repo, monkeypatch):
    """A colleague's fix (Author: Jane) sent by Sam: the DCO sign-off is Sam's, the committer
    identity git is given, as `git commit -s` signs; a sign-off Jane wrote in the description
    stays. Sam sending his own fix signs once. Without an identity for the sender the draft is
    refused, exit 2, nothing written: the certification is never made in another's name."""
    upstream, _ = make_git_repo({"pkg/attn.py": ATTN_V1})
    root = tmp_path / "stack"
    assert run_cli(None, "init", str(root)).rc == 0
    result = run_cli(root, "upstream", "add", "up", "--git", str(upstream), "--at", "main",
                     "--install-root", "/opt/site")
    assert result.rc == 0, result.text
    config = root / "patchforge.toml"
    config.write_text(config.read_text() + "signoff = true\n")
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(
        b"Description: attn: gfx950 takes ck_a8w4\n The generic kernel was slower.\n"
        b"Author: Jane Doe <jane@example.org>\nLast-Update: 2026-01-02\n\n"
        b"Signed-off-by: Jane Doe <jane@example.org>\n---\n" + FIX_DIFF)
    (series / "series").write_bytes(b"fix.patch\n")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Sam Roe")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "sam@example.org")
    result = run_cli(root, "pr", "fix", "--json")
    assert result.rc == 0, result.text
    doc = json.loads(result.stdout)
    assert doc["trailers"] == ["Signed-off-by: Sam Roe <sam@example.org>"]
    mail = Path(doc["written"]["patch"]).read_text()
    assert "From: Jane Doe <jane@example.org>\n" in mail
    assert "\nSigned-off-by: Jane Doe <jane@example.org>\n" \
           "Signed-off-by: Sam Roe <sam@example.org>\n---\n" in mail

    # The sender is the author: one sign-off, theirs.
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Jane Doe")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "jane@example.org")
    result = run_cli(root, "pr", "fix", "--json")
    assert result.rc == 0, result.text
    mail = Path(json.loads(result.stdout)["written"]["patch"]).read_text()
    assert mail.count("Signed-off-by:") == 1 and "Signed-off-by: Sam" not in mail

    # No identity for the sender (no GIT_COMMITTER_*, no user.name/user.email): refused.
    shutil.rmtree(root / ".patchforge" / "pr")
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME",
                "GIT_AUTHOR_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)
    # (and none made up from the host's name, which a machine with a domain name would give)
    (tmp_path / "gitconfig").write_text("[user]\n\tuseConfigOnly = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    result = run_cli(root, "pr", "fix")
    assert result.rc == 2, result.text
    assert "no identity for you" in result.text and "user.email" in result.text
    assert "configuration (signoff = true)" in result.text
    assert not (root / ".patchforge" / "pr").exists()


def test_an_author_without_an_email_address_is_refused_naming_its_line(stack):
    """`pr` refused `Author: Ada Lovelace` naming the patch file but no line (`"line": null`
    in --json): the message names the line the field is on, and nothing is drafted."""
    stack["patch"].write_bytes(PATCH.replace(b"Author: Ada Lovelace <ada@example.com>\n",
                                             b"Author: Ada Lovelace\n"))
    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 2, result.text
    doc = json.loads(result.stdout)["error"]
    assert doc["file"] == str(stack["patch"]) and doc["line"] == 3, doc
    assert f"{stack['patch']}:3: Author: 'Ada Lovelace' does not name an email address" \
        in result.err, result.err
    assert not (stack["root"] / ".patchforge" / "pr").exists()


@pytest.mark.parametrize("value", ["7 Dec 2026", "2026-13-40"])
def test_a_last_update_that_is_no_date_is_refused_naming_its_line(stack, value):
    """`pr` refused `Last-Update: 7 Dec 2026` (no date as it reads one) and `2026-13-40` (no
    day) naming the patch file but no line (`"line": null` in --json): the message names the
    line the field is on, and nothing is drafted."""
    stack["patch"].write_bytes(PATCH.replace(b"Last-Update: 2026-09-12\n",
                                             b"Last-Update: " + value.encode() + b"\n"))
    line = 1 + PATCH[:PATCH.index(b"Last-Update:")].count(b"\n")
    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 2, result.text
    doc = json.loads(result.stdout)["error"]
    assert doc["file"] == str(stack["patch"]) and doc["line"] == line, doc
    assert f"{stack['patch']}:{line}: Last-Update: {value!r} is not a date" in result.err, \
        result.err
    assert not (stack["root"] / ".patchforge" / "pr").exists()


def test_an_author_named_last_name_first_is_one_person(stack):
    """`Author: Lovelace, Ada <ada@example.com>`, git's identity of one person (as `import git`
    of such a commit writes it), was read as a mail header's two people, `Lovelace` without an
    address, and `pr` refused the fix. It is the commit's author, as git has it."""
    stack["patch"].write_bytes(PATCH.replace(b"Author: Ada Lovelace <ada@example.com>\n",
                                             b"Author: Lovelace, Ada <ada@example.com>\n"))
    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 0, result.text
    commit = json.loads(result.stdout)["commit"]
    assert store_git("log", "-1", "--format=%an <%ae>", commit) == \
        "Lovelace, Ada <ada@example.com>\n"


def test_a_template_without_sections_gets_the_description_first():
    from patchforge.pr.body import Facts, make_body

    facts = Facts(subject="Fix it", description="Why it matters.\n\nIt went 12 ms -> 9 ms.",
                  bugs=("https://github.com/o/r/issues/5",), origin=None, profiles=(),
                  profiles_all=True, carried_on="r 1.0 (wheel)", image=None, paths=("a.py",),
                  forge_repo="o/r", onto="`main` at 0123456789ab", how="applies exactly")
    old_vllm = ("FILL IN THE PR DESCRIPTION HERE\n\nFIX #xxxx (*link existing issues this PR will "
                "resolve*)\n\n**BEFORE SUBMITTING, PLEASE READ https://docs.vllm.ai/ **\n")
    body = make_body(facts, (".github/PULL_REQUEST_TEMPLATE.md", old_vllm))
    assert body.text == ("Why it matters.\n\nFixes #5\n\nFIX #xxxx (*link existing issues this PR "
                         "will resolve*)\n\n**BEFORE SUBMITTING, PLEASE READ "
                         "https://docs.vllm.ai/ **\n")
    assert body.filled == ["(description)"]


def test_measurements_are_found_and_model_names_are_not_taken_for_units():
    from patchforge.pr.body import measured_blocks

    text = ("Runs on MI355X with gfx950.\n\nTTFT p99 went from 812 ms to 640 ms.\n\n"
            "It is 1.3x faster.\n\nNo numbers here.\n\n"
            "The offset wraps past 2 GiB (16M slots); a 5 ms timeout fires.\n\n"
            "batch\tms\n1\t4.2\n\n"
            "gsm8k strict-match is unchanged at 0.9719.")
    assert measured_blocks(text) == ["TTFT p99 went from 812 ms to 640 ms.", "It is 1.3x faster.",
                                     "batch\tms\n1\t4.2",
                                     "gsm8k strict-match is unchanged at 0.9719."]


def _fake_gh(tmp_path: Path, monkeypatch, token: str) -> Path:
    """A `gh` on PATH that answers `auth token --hostname HOST` as the GitHub CLI does when
    logged in to HOST (the real gh is not on this machine); it records how it was asked."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "gh.log"
    gh = bindir / "gh"
    gh.write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                  f'[ "$1 $2 $3" = "auth token --hostname" ] && [ "$4" = "127.0.0.1" ] '
                  f'&& echo {token} && exit 0\nexit 1\n')
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    return log


def test_token_from_gh_token_and_from_gh_auth_token(stack, monkeypatch, tmp_path):
    """GH_TOKEN is read like GITHUB_TOKEN; with neither, `gh auth token` for the forge's host."""
    forge = stack["forge"]
    forge.require_token = "tok-from-gh-cli"
    log = _fake_gh(tmp_path, monkeypatch, "tok-from-gh-cli")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 0, result.text
    assert "tok-from-gh-cli" not in result.text
    assert log.read_text() == "auth token --hostname 127.0.0.1\n"
    assert all(r.header("authorization") == "Bearer tok-from-gh-cli" for r in forge.requests)
    forge.require_token = "tok-env-gh"
    monkeypatch.setenv("GH_TOKEN", "tok-env-gh")
    again = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                   "--fork-owner", "ada")
    assert again.rc == 0, again.text
    assert log.read_text() == "auth token --hostname 127.0.0.1\n"  # not asked again


def test_open_checks_the_forge_before_pushing(stack, monkeypatch):
    """No token (exit 2), or a forge that cannot be reached (exit 75: run again later): the
    fork has no new branch."""
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 2
    assert "needs a forge token; nothing was pushed" in result.err
    assert "GH_TOKEN" in result.err and "gh auth login" in result.err
    assert fork_branches(stack["fork"]) == {} and stack["forge"].requests == []

    monkeypatch.setenv("GITHUB_TOKEN", "tok-x")
    config = stack["root"] / "patchforge.toml"
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens there
    config.write_text(config.read_text().replace(stack["forge"].url, dead))
    monkeypatch.setenv("GITHUB_API_URL", dead)
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 75, result.text
    assert "cannot connect to 127.0.0.1:9" in result.err
    assert fork_branches(stack["fork"]) == {}


def test_out_never_writes_into_the_projects_own_files(stack, tmp_path):
    """`--out` names a directory for three files: series/, overlays/, .patchforge/ (but its
    pr/ drafts) and the lock or configuration are refused before anything is drafted."""
    root = stack["root"]
    (root / "series" / "up" / "0001-ck-a8w4-gfx950.patch").write_bytes(b"a fix kept here\n")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    for out in ("series/up", "series", "overlays/x", ".patchforge/work/up", "upstream.lock"):
        result = run_pr(stack, "ck-a8w4-gfx950", "--out", str(root / out))
        assert result.rc == 2, (out, result.text)
        assert ("is never written by this command" in result.err or "is a file" in result.err) \
            and "Traceback" not in result.err
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    # Its own drafts directory and a directory elsewhere are fine.
    for out in (root / ".patchforge" / "pr" / "mine", tmp_path / "drafts"):
        result = run_pr(stack, "ck-a8w4-gfx950", "--out", str(out))
        assert result.rc == 0, result.text
        assert (out / "PR.md").is_file()


def _second_fix(stack) -> None:
    """A second fix of the series, to another file of the upstream: readme-fixed.patch."""
    diff = (b"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
            b"@@ -1 +1 @@\n-upstream\n+upstream, fixed\n")
    (stack["root"] / "series/up/readme-fixed.patch").write_bytes(
        b"Description: readme: say it is fixed\nAuthor: Ada Lovelace <ada@example.com>\n"
        b"Upstream-Status: Pending\nUpstream: up\nBase: " + stack["base"].encode()
        + b"\n\n---\n" + diff)
    (stack["root"] / "series/up/series").write_bytes(b"ck-a8w4-gfx950.patch\nreadme-fixed.patch\n")


def test_out_holding_another_fixs_draft_is_refused(stack, monkeypatch, tmp_path):
    """`pr A --out DIR`, A's PR.md filled in there, then `pr B --out DIR --push --open`: B's
    pull request was opened with A's description (PR.md kept as changed by hand, so sent).
    Now refused, exit 2, naming A's draft, before anything is written, pushed or opened; so is
    a directory holding the record of another fix's pull request. A directory of its own
    drafts B with its own words; another fix's draft with nothing of that fix's in it (a dry
    run's, as written) is written over, as before."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-1")
    _second_fix(stack)
    fork = str(stack["fork"])
    out = tmp_path / "drafts"
    assert run_pr(stack, "ck-a8w4-gfx950", "--out", str(out)).rc == 0
    body = out / "PR.md"
    body.write_text(body.read_text().replace("## Test Plan\n", "## Test Plan\n\nRan the MoE "
                                             "suite on MI355X TP4.\n", 1))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    branches = fork_branches(stack["fork"])
    result = run_pr(stack, "readme-fixed", "--out", str(out), "--push", fork, "--open",
                    "--fork-owner", "ada")
    assert result.rc == 2, result.text
    assert "up/ck-a8w4-gfx950.patch" in result.err and "PR.md" in result.err, result.err
    assert "nothing was written" in result.err and str(out / "readme-fixed") in result.err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert fork_branches(stack["fork"]) == branches
    assert not [r for r in forge.requests if r.method in ("POST", "PATCH")]
    # In a directory of its own, it goes with its own description.
    own = out / "readme-fixed"
    result = run_pr(stack, "readme-fixed", "--out", str(own), "--push", fork, "--open",
                    "--fork-owner", "ada")
    assert result.rc == 0, result.text
    sent = json.loads([r for r in forge.requests if r.method == "POST"][-1].body)
    assert sent["title"] == "readme: say it is fixed" and "MoE suite" not in sent["body"]
    # The record of its pull request is not another fix's to write over.
    result = run_pr(stack, "ck-a8w4-gfx950", "--out", str(own))
    assert result.rc == 2 and "acme/up#1" in result.err, result.text
    assert json.loads((own / "pr.json").read_text())["patch"] == "readme-fixed.patch"
    # A dry run's draft of another fix, as written, is a scratch directory.
    scratch = tmp_path / "scratch"
    assert run_pr(stack, "ck-a8w4-gfx950", "--out", str(scratch)).rc == 0
    result = run_pr(stack, "readme-fixed", "--out", str(scratch))
    assert result.rc == 0, result.text
    assert json.loads((scratch / "pr.json").read_text())["patch"] == "readme-fixed.patch"


def test_a_description_git_am_would_read_as_a_mail_header_is_refused(stack, tmp_path):
    """A description whose first line begins `From:` (or Subject:, Date:) is an in-body header
    to `git am`: the format-patch file gave another author, or none ('empty ident name'), and
    the line was gone from the message. pr refuses it, naming the patch file, and writes
    nothing; the patch as it was drafts and applies with git am, as before."""
    patch = stack["patch"]
    patch.write_bytes(PATCH.replace(
        b" On gfx950 the backend fell through to the generic CK kernel.\n",
        b" From: the crash report in acme/up#77, the kernel falls through on gfx950.\n"))
    result = run_pr(stack, "ck-a8w4-gfx950")
    assert result.rc == 2, result.text
    assert str(patch) in result.err and "git am" in result.err
    assert "'From: the crash report in acme/up#77" in result.err
    assert not (stack["root"] / ".patchforge" / "pr").exists()
    patch.write_bytes(PATCH)
    assert run_pr(stack, "ck-a8w4-gfx950").rc == 0
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(stack["upstream"]), str(clone))
    git(clone, "am", "-q", str(stack["root"] / ".patchforge/pr/up/ck-a8w4-gfx950"
                                / "0001-ck-a8w4-gfx950.patch"))


def test_open_never_takes_another_branchs_pull_request_for_its_own(stack, monkeypatch):
    """The forge lists open pull requests by `head` (`owner:branch`), but GitHub answers a head
    whose owner it does not know with every open pull request, unfiltered. `pr --open` took
    the first one, someone else's, for its own: it rewrote that pull request's title and body
    and recorded its URL in the patch. Only a pull request from the pushed branch is taken."""
    forge = stack["forge"]
    forge.ignore_head_filter = True
    forge.add_pull("acme/up", 1, head_ref="feature", head_label="mallory:feature",
                   title="Someone else's change")
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada", "--json")
    assert result.rc == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["pull"]["action"] == "opened" and doc["pull"]["number"] == 2
    assert [r.method for r in forge.requests if r.method != "GET"] == ["POST"]
    assert forge.pulls[("acme/up", 1)]["title"] == "Someone else's change"
    url = "https://github.com/acme/up/pull/2"
    assert f"Forwarded: {url}\n".encode() in stack["patch"].read_bytes()


def test_open_never_takes_a_redirected_post_for_a_pull_request_it_opened(stack, monkeypatch):
    """A forge (or a proxy before it) answering the POST that opens the pull request with a
    302: it was followed as a GET, which answered with an existing pull request (someone
    else's), and `pr --open` said it had opened it and recorded its address in the patch. Now
    the command fails saying the POST arrived as a GET, and the patch is left as it was."""
    from helpers.servers import Answer

    forge = stack["forge"]
    forge.add_pull("acme/up", 1, head_ref="feature", head_label="mallory:feature",
                   title="Someone else's change")
    route = forge.route

    def redirect_posts(method, path, query, req):
        if method == "POST":
            return Answer(302, b"", {"Location": f"{forge.url}/repos/acme/up/pulls/1"})
        return route(method, path, query, req)

    forge.route = redirect_posts
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    before = stack["patch"].read_bytes()
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 2, result.text
    assert "where it arrived as a GET: the POST was not done" in result.err, result.err
    assert stack["patch"].read_bytes() == before
    assert forge.pulls[("acme/up", 1)]["title"] == "Someone else's change"


def test_open_never_records_an_address_that_is_not_the_pull_request(stack, monkeypatch):
    """The forge's answer names the pull request's web address: one of another repository (or
    number) was written into Forwarded, and status then followed that other pull request (and
    said it merged). It is refused, naming it, and the patch is left as it was."""
    forge = stack["forge"]
    forge.html_url_template = "https://github.com/mallory/elsewhere/pull/{number}"
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 2, result.output
    assert "https://github.com/mallory/elsewhere/pull/1" in result.err
    assert "not recorded in up/ck-a8w4-gfx950" in result.err
    assert stack["patch"].read_bytes() == PATCH


@pytest.mark.parametrize("fragment", ["#\x1b]0;owned\x07\x1b[2J", "#\u202etop", "\n",
                                      "?x=\x1b[2J#y"])
def test_open_records_the_pull_requests_own_address_never_the_forges_text(
        stack, monkeypatch, fragment):
    """The forge's answer named the right pull request with a `#fragment` holding terminal
    escapes (or a bidirectional override, or a trailing newline): it was written as it came
    into Forwarded and Upstream-Status (and the history), exit 0, and the project's own lint
    then failed on that patch. The address recorded is the pull request's, made of its
    checked parts."""
    from helpers.cli import run_cli

    forge = stack["forge"]
    forge.html_url_template = "https://github.com/{repo}/pull/{number}" + fragment
    monkeypatch.setenv("GITHUB_TOKEN", "tok-3f9a1c77e2")
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada")
    assert result.rc == 0, result.text
    data = stack["patch"].read_bytes()
    assert b"Forwarded: https://github.com/acme/up/pull/1\n" in data, data.decode()
    assert b"Upstream-Status: Submitted [https://github.com/acme/up/pull/1]\n" in data
    assert not any(ch in data.decode() for ch in "\x1b\x07\u202e"), data
    history = (stack["root"] / "series" / "history.jsonl").read_text()
    assert '"url":"https://github.com/acme/up/pull/1"' in history, history
    lint = run_cli(stack["root"], "--offline", "lint", "--no-forge")
    assert "control character" not in lint.text and "ck-a8w4-gfx950.patch:" not in lint.text, \
        lint.text


@pytest.mark.parametrize("url, api_url, fine", [
    ("https://github.com/acme/up/pull/7", "https://api.github.com", True),
    ("https://github.com/acme/up/pull/7#top", "https://api.github.com", True),
    ("https://evil.example/acme/up/pull/7", "https://api.github.com", False),
    ("http://github.com/acme/up/pull/7", "https://api.github.com", False),
    ("https://github.com/acme/up/pull/8", "https://api.github.com", False),
    ("https://github.com/acme/other/pull/7", "https://api.github.com", False),
    ("https://api.github.com/repos/acme/up/pulls/7", "https://api.github.com", False),
    ("https://ghe.example.com/acme/up/pull/7", "https://ghe.example.com/api/v3", True),
    ("https://github.com/acme/up/pull/7", "https://ghe.example.com/api/v3", False),
])
def test_the_recorded_address_is_the_pull_request_on_the_forges_own_host(url, api_url, fine):
    from patchforge.errors import NetworkError
    from patchforge.pr.submit import check_pull_url

    if fine:
        recorded = check_pull_url(url, "acme/up", 7, api_url, "up/fix")
        assert recorded == url.partition("#")[0]
    else:
        with pytest.raises(NetworkError):
            check_pull_url(url, "acme/up", 7, api_url, "up/fix")


def test_a_fix_made_on_an_earlier_fixs_line_names_it_and_never_hints_a_rebase(
        tmp_path, make_git_repo, monkeypatch):
    """fix-a changes line10, fix-b (after it) line11: fix-b is made on fix-a's line. `pr fix-b`
    said "does not go onto main: conflict ... `patchforge rebase --to up=main` moves the series
    there (this fix is resolved at its stop)"; the rebase went clean, with no stop, and `pr`
    said the same again. It names the line fix-b is made on and the patch that made it, and
    the ways that work (send fix-a first), before and after the series is on main; a conflict
    with the upstream's own change still hints the rebase."""
    from helpers.cli import ok
    from helpers.schemas import schema_errors

    monkeypatch.setenv("PATCHFORGE_DATE", "2026-12-01")
    lines = b"".join(b"line%d\n" % i for i in range(30))
    upstream, base = make_git_repo({"pkg/m.py": lines})
    (upstream / "pkg/m.py").write_bytes(lines.replace(b"line25\n", b"line25 main\n"))
    _commit_all(upstream, "main moves on")
    root = tmp_path / "stack"
    ok(None, "init", str(root))
    ok(root, "upstream", "add", "up", "--git", str(upstream), "--at", base, "--follow", "main")
    for name, old, new in (("fix-a", b"line10\n", b"LINE10\n"),
                           ("fix-b", b"line11\n", b"LINE11\n")):
        ok(root, "new", name, "--file", "pkg/m.py", "-m", f"Fix {name}")
        work = root / ".patchforge/work/up/pkg/m.py"
        work.write_bytes(work.read_bytes().replace(old, new))
        ok(root, "refresh")

    def refused() -> str:
        result = run_cli(root, "pr", "fix-b")
        assert result.rc == 1, result.text
        assert "up/fix-b.patch: does not go onto main (" in result.err, result.err
        assert "it is made on lines that fix-a.patch made, which main does not have\n" \
            "  pkg/m.py line 11: `LINE10` (fix-a.patch)\n" in result.err, result.err
        assert "nothing was written or pushed; send fix-a.patch first (`patchforge pr " \
            "fix-a`): fix-b.patch goes onto main once it is there" in result.err, result.err
        assert "rebase" not in result.err, result.err
        assert not (root / ".patchforge" / "pr").exists()
        return result.err

    first = refused()
    doc = json.loads(run_cli(root, "pr", "fix-b", "--json").stdout)
    assert schema_errors(doc, "pr") == []
    assert doc["state"] == "conflict" and doc["made_on"] == [
        {"path": "pkg/m.py", "line": 11, "text": "LINE10", "patch": "fix-a.patch",
         "taken_out": False}]
    # On main already, the same answer (the rebase it hinted has no stop).
    assert "2 clean" in ok(root, "rebase", "--to", "up=main").out
    assert refused() == first
    # The way it names works: fix-a goes onto main.
    assert "onto main" in ok(root, "pr", "fix-a").out


@pytest.mark.parametrize("follow, said", [
    ("v*", "'v*' is a pattern: follow names one branch or tag (patterns are not followed)"),
    ("relase", "'relase': {upstream} has no branch or tag 'relase' (its branches: main"),
])
def test_a_follow_the_upstream_cannot_give_is_named_by_its_file_line_and_key(stack, follow,
                                                                             said):
    """`follow = "v*"` (the reference said "the branch or tag pattern to follow") and a typo
    (`follow = "relase"`): both said "<url> has no branch or tag 'v*'", naming neither the
    configuration file, its line, nor the key the value came from (nothing on the command line
    said it). A pattern is refused as one when the configuration is read; a name the upstream
    does not have is said as the key's, with its file and line; nothing is written."""
    config = stack["root"] / "patchforge.toml"
    text = config.read_text().replace('follow = "main"', f'follow = "{follow}"')
    config.write_text(text)
    line = text.splitlines().index(f'follow = "{follow}"') + 1
    out = stack["root"].parent / "pr-out"
    commands = [("pr", "ck-a8w4-gfx950", "--out", str(out))]
    if "*" in follow:
        # A pattern is refused when the configuration is read, by every command.
        commands += [("bump", "up"), ("status",)]
    for command in commands:
        result = run_cli(stack["root"], *command)
        assert result.rc == 2, (command, result.text)
        assert f"patchforge.toml:{line}: upstreams.up.follow: " in result.err, result.err
        assert said.format(upstream=stack["upstream"]) in result.err, result.err
        assert not out.exists()


def test_a_follow_the_store_cannot_read_is_never_said_as_the_configurations(stack):
    """Only an upstream that has no such branch or tag makes `follow` the configuration's
    fault. With --offline and the branch never fetched, pr said
    "patchforge.toml:11: upstreams.up.follow: 'main': ... is not in the store" with the advice
    to change `follow`, which is right; and a damaged store stays the store's damage.
    (`upstream add --follow` fetches the followed branch: its ref is taken out of the store
    here, for a branch never fetched.)"""
    out = stack["root"].parent / "pr-out"
    for ref in store_git("for-each-ref", "--format=%(refname)",
                         "refs/patchforge/remotes/").split():
        if ref.endswith("/heads/main"):
            store_git("update-ref", "-d", ref)
    result = run_cli(stack["root"], "--offline", "pr", "ck-a8w4-gfx950", "--out", str(out))
    assert result.rc == 2, result.text
    assert "upstreams.up.follow" not in result.err and "patchforge.toml" not in result.err, \
        result.err
    assert "'main' is not in the store as a revision of" in result.err, result.err
    assert "--offline forbids fetching it" in result.err, result.err
    assert "set `follow`" not in result.err, result.err
    assert not out.exists()

    # Fetched once, then the ref of the followed branch holds garbage (a disk error).
    assert run_cli(stack["root"], "pr", "ck-a8w4-gfx950", "--out", str(out)).rc == 0
    shutil.rmtree(out)
    refs = store_git("for-each-ref", "--format=%(refname)", "refs/patchforge/remotes/")
    followed = [ref for ref in refs.split() if ref.endswith("/heads/main")]
    assert len(followed) == 1, refs
    from patchforge.store.gitstore import cache_dir

    (cache_dir() / "store.git" / followed[0]).write_text("garbage\n")
    for offline in ((), ("--offline",)):
        result = run_cli(stack["root"], *offline, "pr", "ck-a8w4-gfx950", "--out", str(out))
        assert result.rc == 2, result.text
        assert "store.git is damaged" in result.err, result.err
        assert "upstreams.up.follow" not in result.err, result.err
        assert not out.exists()


def test_open_refuses_a_pr_md_of_unknown_origin_until_the_user_says_to_send_it(stack,
                                                                            monkeypatch):
    """A PR.md pr.json records no digest of (an older patchforge's pr.json): it may be the
    user's words or a stale draft. Before, `pr --push --open` sent it as the description,
    exit 0, a note in the output the only word. Now --open refuses (exit 2, naming PR.md,
    PR.new.md and --keep-body), nothing pushed or sent; with --keep-body it is sent as it is
    and counts as the user's edit of the draft from then on: the next --open sends it without
    the flag, and a later change of the draft goes beside it as PR.new.md."""
    forge = stack["forge"]
    monkeypatch.setenv("GITHUB_TOKEN", "tok-1")
    out, record, stale = drafted_by_an_older_patchforge(stack)
    opening = ("--push", str(stack["fork"]), "--open", "--fork-owner", "ada")
    refused = run_pr(stack, "ck-a8w4-gfx950", *opening)
    assert refused.rc == 2, refused.text
    assert f"{out / 'PR.md'}: pr.json does not record what patchforge wrote to it" in \
        refused.err and "nothing was pushed or opened" in refused.err, refused.err
    assert "--keep-body" in refused.err and f"`mv {out / 'PR.new.md'} {out / 'PR.md'}`" in \
        refused.err, refused.err
    assert [r for r in forge.requests if r.method in ("POST", "PATCH")] == []
    assert fork_branches(stack["fork"]) == {}
    assert (out / "PR.md").read_bytes() == stale

    sent = run_pr(stack, "ck-a8w4-gfx950", *opening, "--keep-body")
    assert sent.rc == 0, sent.text
    posts = [r for r in forge.requests if r.method == "POST"]
    assert json.loads(posts[-1].body)["body"] == stale.decode()
    assert json.loads(record.read_text())["written"]["body_origin"] == "edited"
    again = run_pr(stack, "ck-a8w4-gfx950", *opening)
    assert again.rc == 0 and "changed by hand since it was written" in again.out, again.text
    patches = [r for r in forge.requests if r.method == "PATCH"]
    assert json.loads(patches[-1].body)["body"] == stale.decode()
    (out / "PR.new.md").unlink()
    _upstream_moves_on(stack, b"# another header\n")
    moved = run_pr(stack, "ck-a8w4-gfx950")
    assert moved.rc == 0 and (out / "PR.new.md").is_file(), moved.text
    assert (out / "PR.md").read_bytes() == stale


def test_a_wheel_upstreams_fix_that_does_not_go_onto_the_base_names_a_move_that_works(
        tmp_path, monkeypatch):
    """A wheel upstream with a `git-url`: a fix that does not go onto its main (main changed
    its line) said "`patchforge rebase --to tiny=main` moves the series there", which a wheel
    upstream refuses ("name a version of tinypkg"): its series moves to a version of its
    wheel, and its pin (the wheel's import) is never main's commit. The way named now is
    `rebase --to tiny=VERSION`; with the version that has main's change it stops on the fix,
    resolved there, and the fix goes onto main."""
    from helpers.cli import ok
    from helpers.upstream import Upstream, build_wheel, dep3_patch
    from patchforge.store.diff import make_file_diff

    calc, base = "tinypkg/calc.py", b"a = 1\nb = 2\nc = 3\nd = 4\n"
    later = base.replace(b"b = 2\n", b"b = 20\n")
    up = Upstream(tmp_path / "tiny", {calc: base})
    up.commit({calc: later}, "Later")
    build_wheel(tmp_path / "wheels", "tinypkg", "1.0", {calc: base})
    build_wheel(tmp_path / "wheels", "tinypkg", "1.1", {calc: later})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    config = root / "patchforge.toml"
    config.write_text(config.read_text() + f'git-url = "{up.path}"\n')
    series = root / "series" / "tiny"
    series.mkdir(parents=True)
    (series / "fix.patch").write_bytes(dep3_patch(make_file_diff(
        calc, calc, base, base.replace(b"b = 2\n", b"b = 22\n")), description="Fix b"))
    (series / "series").write_text("fix.patch\n")
    result = run_cli(root, "pr", "fix")
    assert result.rc == 1 and "does not go onto main" in result.err, result.text
    assert "`patchforge rebase --to tiny=VERSION` moves the series to a version of tinypkg " \
        "that has main's change (this fix is resolved at its stop)" in result.err, result.err
    assert "tiny=main" not in result.err
    moved = run_cli(root, "rebase", "--to", "tiny=1.1")  # VERSION: the one with main's change
    assert moved.rc == 3, moved.text
    (root / ".patchforge/work/tiny" / calc).write_bytes(later.replace(b"b = 20\n", b"b = 22\n"))
    ok(root, "rebase", "--continue")
    result = run_cli(root, "pr", "fix", "--json")
    assert result.rc == 0, result.text
    assert json.loads(result.stdout)["how"] == "applies"


def test_a_directory_upstreams_fix_that_does_not_go_onto_the_base_names_a_move_that_works(
        tmp_path, make_git_repo):
    """A directory upstream with a `git-url`, the same: `rebase --to site=main` would import
    the directory as it is under the label `main`, never main's files. The way named is a
    label once the directory holds a version with main's change; followed, the fix is resolved
    at its stop and goes onto main."""
    from helpers.cli import ok

    calc, base = "pkg/calc.py", b"a = 1\nb = 2\nc = 3\nd = 4\n"
    later = base.replace(b"b = 2\n", b"b = 20\n")
    upstream, _ = make_git_repo({calc: base})
    (upstream / calc).write_bytes(later)
    _commit_all(upstream, "Later")
    installed = tmp_path / "site-packages"
    (installed / "pkg").mkdir(parents=True)
    (installed / calc).write_bytes(base)
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "site", "--dir", str(installed), "--at", "v1")
    config = root / "patchforge.toml"
    config.write_text(config.read_text() + f'git-url = "{upstream}"\n')
    (root / "series" / "site").mkdir(parents=True)
    (root / "series" / "site" / "fix.patch").write_bytes(
        b"Description: Fix b\nAuthor: Ada Lovelace <ada@example.com>\n\n---\n"
        b"diff --git a/pkg/calc.py b/pkg/calc.py\n--- a/pkg/calc.py\n+++ b/pkg/calc.py\n"
        b"@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 22\n c = 3\n")
    (root / "series" / "site" / "series").write_bytes(b"fix.patch\n")
    result = run_cli(root, "pr", "fix")
    assert result.rc == 1 and "does not go onto main" in result.err, result.text
    assert f"once {installed} holds a version that has main's change, `patchforge rebase " \
        "--to site=LABEL` (LABEL naming that version) moves the series there" in result.err, \
        result.err
    (installed / calc).write_bytes(later)  # the directory now holds main's change
    moved = run_cli(root, "rebase", "--to", "site=v2")
    assert moved.rc == 3, moved.text
    (root / ".patchforge/work/site" / calc).write_bytes(later.replace(b"b = 20\n", b"b = 22\n"))
    ok(root, "rebase", "--continue")
    result = run_cli(root, "pr", "fix", "--json")
    assert result.rc == 0, result.text
    assert json.loads(result.stdout)["how"] == "applies"


def test_a_pr_json_nested_too_deep_never_ends_a_draft_in_an_internal_error(stack):
    """pr.json is the draft directory's record of what was written and sent; one nested a
    hundred thousand deep ended the next `pr` in "internal error: RecursionError", exit 70.
    It is read as no record, as one cut short always was: the draft is made again."""
    first = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert first.rc == 0, first.text
    record = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950" / "pr.json"
    record.write_text("[" * 100000 + "]" * 100000)
    again = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert again.rc == 0, again.text
    assert json.loads(again.stdout)["commit"] == json.loads(first.stdout)["commit"]
    assert isinstance(json.loads(record.read_text()), dict)


def test_a_fix_named_as_no_branch_can_be_is_said_before_the_push_and_not_made_again(stack,
                                                                                 tmp_path):
    """A fix named `ck..gfx950` (the series holds it from before), and one imported from a
    commit "Pin triton in uv.lock". Its pull request's branch, patchforge/<name>, is no git
    branch name: the dry run said nothing, and `pr --push` failed with git's own "fatal:
    invalid refspec" after the draft was made. The push is now refused first, naming the
    `rename` that gives a name a branch can carry, and followed, the push goes; `new` and
    `rename` refuse such a name for a new fix, and the import makes one a branch carries."""
    import re
    import shlex

    root, fork = stack["root"], stack["fork"]
    series = root / "series" / "up"
    (series / "ck-a8w4-gfx950.patch").rename(series / "ck..gfx950.patch")
    (series / "series").write_bytes(b"ck..gfx950.patch\n")
    dry = run_pr(stack, "ck..gfx950")
    assert dry.rc == 0 and "branch patchforge/ck..gfx950 is no git branch name" in dry.err, \
        dry.text
    pushed = run_pr(stack, "ck..gfx950", "--push", str(fork))
    assert pushed.rc == 2 and "nothing was pushed" in pushed.err, pushed.text
    assert "invalid refspec" not in pushed.err and fork_branches(fork) == {}
    hint = next(line for line in pushed.err.splitlines() if line.startswith("hint: "))
    rename, again = re.findall(r"`([^`]*)`", hint)
    assert run_cli(root, *shlex.split(rename)[1:]).rc == 0, rename
    pushed = run_cli(root, *shlex.split(again)[1:], "--push", str(fork))
    assert pushed.rc == 0, pushed.text
    assert list(fork_branches(fork)) == ["refs/heads/patchforge/ck.gfx950"]
    # A new fix is never given such a name.
    for name in ("x.lock", "a..b", "a~b", "a^b", "a[b", "a@{b", "a."):
        refused = run_cli(root, "new", name, "-m", "A fix")
        assert refused.rc == 2 and "cannot name its pull request's branch" in refused.err, \
            (name, refused.text)
        assert run_cli(root, "rename", "ck.gfx950", name).rc == 2, name
    # An import names the fix of a commit "Pin triton in uv.lock" so that its branch pushes.
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(stack["upstream"]), str(work))
    git(work, "checkout", "-q", stack["base"])
    (work / "README.md").write_bytes(b"upstream, pinned\n")
    _commit_all(work, "Pin triton in uv.lock")
    imported = run_cli(root, "import", "git", f"{stack['base']}..HEAD", "--repo", str(work))
    assert imported.rc == 0, imported.text
    (name,) = re.findall(r"imported up/(\S+)\.patch", imported.out)
    assert name == "pin-triton-in-uv-lock"
    pushed = run_pr(stack, name, "--push", str(fork))
    assert pushed.rc == 0, pushed.text
    assert f"refs/heads/patchforge/{name}" in fork_branches(fork)


def test_a_subjects_own_bracketed_tags_are_the_pull_requests_title(stack, monkeypatch):
    """vLLM titles its pull requests `[ROCm][Bugfix] ...`. A fix whose Description begins so was
    sent as `Fix ...`: the title, the commit's subject and the format-patch file's Subject lost
    the tags, as if they were a mailer's `[PATCH]`. Only a `[PATCH ...]` group goes; the
    author's tags are the title the forge gets."""
    monkeypatch.setenv("GITHUB_TOKEN", "tok-1")
    patch = stack["patch"]
    patch.write_bytes(patch.read_bytes().replace(
        b"Description: attn: select", b"Description: [PATCH v2] [ROCm][Bugfix] attn: select"))
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]), "--open",
                    "--fork-owner", "ada", "--json")
    assert result.rc == 0, result.text
    title = "[ROCm][Bugfix] attn: select the CK a8w4 experts on gfx950"
    sent = json.loads([r for r in stack["forge"].requests if r.method == "POST"][-1].body)
    assert sent["title"] == title
    branch = "refs/heads/patchforge/ck-a8w4-gfx950"
    assert show(stack["fork"], "%s", branch).strip() == title
    mail = stack["root"] / ".patchforge/pr/up/ck-a8w4-gfx950/0001-ck-a8w4-gfx950.patch"
    assert f"Subject: [PATCH] {title}\n".encode() in mail.read_bytes()


def test_a_template_that_is_a_symbolic_link_is_read_from_the_file_it_names_inside_the_tree(
        stack):
    """The upstream's `.github/PULL_REQUEST_TEMPLATE.md` a symbolic link (git mode 120000):
    its blob, the path it names, was read as the template, and PR.md's body was
    `../docs/pr_template.md`, said to be "from the upstream's" template (exit 0; `--open`
    would send it). A link inside the tree is followed, as a checkout gives it, and said; one
    leading outside the tree (absolute, or `..` past the root) or to no file is not used: the
    plain body, and a note saying so. Nothing outside the tree is ever read."""
    import os

    upstream = stack["upstream"]
    (upstream / "docs").mkdir()
    (upstream / "docs" / "pr_template.md").write_bytes(
        b"## Purpose\n\n## Test Plan\n\n## Test Result\n\nLINKED TEMPLATE TAIL\n")
    link = upstream / ".github" / "PULL_REQUEST_TEMPLATE.md"
    link.unlink()
    os.symlink("../docs/pr_template.md", link)
    _commit_all(upstream, "template: kept in docs/")
    body_path = stack["root"] / ".patchforge" / "pr" / "up" / "ck-a8w4-gfx950" / "PR.md"

    result = run_pr(stack, "ck-a8w4-gfx950")
    assert result.rc == 0, result.text
    assert "(from the upstream's .github/PULL_REQUEST_TEMPLATE.md)" in result.out, result.out
    assert "note: .github/PULL_REQUEST_TEMPLATE.md is a symbolic link to docs/pr_template.md: " \
           "that file is the pull-request template" in result.out, result.out
    body = body_path.read_text()
    assert "LINKED TEMPLATE TAIL" in body and "../docs/pr_template.md" not in body
    # --json says the same note (it was left out: only text mode printed it).
    from helpers.schemas import schema_errors

    result = run_pr(stack, "ck-a8w4-gfx950", "--json")
    assert result.rc == 0, result.text
    document = json.loads(result.out)
    assert schema_errors(document, "pr") == []
    assert document["body"]["notes"] == [
        ".github/PULL_REQUEST_TEMPLATE.md is a symbolic link to docs/pr_template.md: that file "
        "is the pull-request template"], document["body"]
    assert "## Purpose\n\nOn gfx950 the backend fell through" in body, body

    secret = stack["root"].parent / "outside.md"
    secret.write_text("## Purpose\n\nOUTSIDE THE TREE\n")
    for target in (str(secret), "../../" + secret.name, "../docs/none.md"):
        link.unlink()
        os.symlink(target, link)
        _commit_all(upstream, f"template: {target}")
        result = run_pr(stack, "ck-a8w4-gfx950")
        assert result.rc == 0, result.text
        assert "from the upstream's" not in result.out, result.out
        said = ("a symbolic link to docs/none.md, which is no file in the upstream's tree"
                if target.endswith("none.md") else "a symbolic link leading outside the "
                "upstream's tree")
        assert f"note: .github/PULL_REQUEST_TEMPLATE.md is {said}: not used as the " \
               "pull-request template" in result.out, (target, result.out)
        body = body_path.read_text()
        assert target not in body and "OUTSIDE THE TREE" not in body, (target, body)
        assert "## Purpose" in body  # the plain body's own sections


def test_a_push_the_fork_gives_no_answer_to_exits_75_and_a_refused_one_2(stack):
    """`pr NAME --push URL` where the fork's host gives no answer (nothing listens there) said
    "pushing ... failed" with exit 2, "bad input": a CI job that retries on 75 failed at once
    on the network's hiccup. It exits 75 now (run it again later); a push the fork refuses (a
    pre-receive hook) is an answer, still exit 2, naming the fork and git's reason."""
    result = run_pr(stack, "ck-a8w4-gfx950", "--push", "http://127.0.0.1:9/fork.git")
    assert result.rc == 75, result.text
    assert "pushing patchforge/ck-a8w4-gfx950 to http://127.0.0.1:9/fork.git failed" in \
        result.err, result.text
    hook = stack["fork"] / "hooks/pre-receive"
    hook.write_text("#!/bin/sh\necho 'refused by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    refused = run_pr(stack, "ck-a8w4-gfx950", "--push", str(stack["fork"]))
    assert refused.rc == 2 and "refused by policy" in refused.err, refused.text
    assert fork_branches(stack["fork"]) == {}
