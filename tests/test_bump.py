"""`patchforge bump` end to end: a registry on 127.0.0.1 with a paginated tags list, a real git
upstream with pull-request merge commits, the test forge for PR states and the stack repository's
own pull request, and a series with landed, moved, PR-dependent and conflicting fixes.

Commit dates are fixed, so every commit id (and so the report) is the same on every run; the
report of the real run is compared with the golden file tests/golden/bump-report.md (the
registry's port is the only part that varies, and is replaced by REGISTRY).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.env import REPO_ROOT
from helpers.git import git
from helpers.golden import check_golden
from helpers.snapshot import tree_bytes
from helpers.upstream import (AITER, ATTENTION, BLOCK, CLAMP, INDPTR, Upstream, build_wheel,
                              changed, dep3_patch)
from patchforge.formats.schemas import validation_errors
from patchforge.store.diff import make_file_diff

ATTN = "pkg/attn.py"
OTHER = "pkg/other.py"
REPO = "rocm/vllm-dev"
UPSTREAM_PR = "https://github.com/vllm-project/vllm/pull/{}"

BASE = ATTENTION
OTHER_BASE = b"VALUE = 1\n\n\ndef other():\n    return VALUE\n"

VALUE = (b"VALUE = 1\n", b"VALUE = 2  # compressed\n")
HEADER = b'# Copyright the upstream authors.\n# SPDX-License-Identifier: Apache-2.0\n'


INSTALL_ROOT = "usr/local/lib/python3.12/dist-packages"


def layer(files: dict[str, bytes]) -> tuple[bytes, str, str]:
    """One gzip layer holding `files` under the install root, as an image build writes it."""
    import gzip
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{INSTALL_ROOT}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 1700000000
            archive.addfile(info, io.BytesIO(data))
    tar = out.getvalue()
    return (gzip.compress(tar, mtime=0), "application/vnd.oci.image.layer.v1.tar+gzip",
            "sha256:" + hashlib.sha256(tar).hexdigest())


def patch_file(path: str, old: bytes, new: bytes, description: str, extra: str = "") -> bytes:
    return dep3_patch(make_file_diff(path, path, old, new), description=description, extra=extra)


class Scenario:
    """The upstream history, the registry's images, the forge's pull requests, the stack."""

    def __init__(self, tmp: Path, registry, forge, *, conflict: bool) -> None:
        self.registry, self.forge = registry, forge
        self._minutes = 0
        # Every commit dated, the first too: its id (and so every later one's, which the
        # nightlies' order below depends on) is then the same on every run.
        for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
            os.environ[var] = "2026-09-10T12:00:00Z"
        up = self.upstream = Upstream(tmp / "vllm", {ATTN: BASE, OTHER: OTHER_BASE})
        commit = up.commit

        def dated(*args, **kw):  # one minute apart: a history as people make it
            self._minutes += 1
            for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
                os.environ[var] = f"2026-09-10T12:{self._minutes:02d}:00Z"
            return commit(*args, **kw)

        up.commit = dated
        self.c0 = up.base
        self.c1 = up.commit({ATTN: HEADER + BASE}, "Add the license header")
        # PR #7, merged with a merge commit: the indptr fix lands.
        git(up.path, "checkout", "-q", "-b", "dev/indptr")
        self.s7 = up.commit({ATTN: changed(HEADER + BASE, INDPTR)}, "Fill indptr padding lanes")
        git(up.path, "checkout", "-q", "main")
        self._minutes += 1
        os.environ["GIT_COMMITTER_DATE"] = f"2026-09-10T12:{self._minutes:02d}:00Z"
        git(up.path, "merge", "-q", "--no-ff", "-m",
            "Merge pull request #7 from dev/indptr", "dev/indptr")
        self.m7 = up.head()
        # A squash merge (#11): the VALUE fix lands, named in the subject only.
        self.c2 = up.commit({OTHER: changed(OTHER_BASE, VALUE)}, "Compress the cache (#11)")
        self.c3 = up.commit({ATTN: changed(HEADER + BASE, INDPTR).replace(
            b"block_size or 16", b"block_size or 64")}, "Bigger default blocks")
        # PR #9, merged after the newest nightly: not in it.
        git(up.path, "checkout", "-q", "-b", "dev/scale")
        up.commit({OTHER: changed(OTHER_BASE, VALUE) + b"SCALE = 2\n"}, "Scale")
        git(up.path, "checkout", "-q", "main")
        self._minutes += 1
        os.environ["GIT_COMMITTER_DATE"] = f"2026-09-10T12:{self._minutes:02d}:00Z"
        git(up.path, "merge", "-q", "--no-ff", "-m", "Merge pull request #9 from dev/scale",
            "dev/scale")
        self.m9 = up.head()
        # Nightlies: the pin's, an older one whose id sorts after the newest (so ordering by
        # the tag's text would choose it), the newest, and one of a commit upstream never had.
        older = next((c for c in (self.c1, self.m7, self.c2) if c > self.c3), None)
        assert older is not None, "the fixed dates should give an id sorting after c3"
        self.older = older
        self.foreign = hashlib.sha1(b"not upstream").hexdigest()
        labels = lambda c: {"vllm.commit": c, "org.opencontainers.image.version": "0.0.dev"}
        self.images = {}
        for commit, created in ((self.c0, "2026-09-01T05:00:00Z"),
                                (older, "2026-09-05T05:00:00Z"),
                                (self.c3, "2026-09-12T05:27:48Z"),
                                (self.foreign, "2026-09-13T05:00:00Z")):
            files = {p: up.read(p, commit) for p in (ATTN, OTHER)} if commit != self.foreign \
                else {}
            self.images[commit] = registry.push_image(
                REPO, f"nightly-{commit}", labels(commit), created=created,
                layers=(layer(files),) if files else ())
        for tag in ("latest", "nightly", "v0.11.0", "nightly-rocm7.0"):
            registry.push_image(REPO, tag, labels(self.c3))
        # The forge: the states of the PRs the fixes name.
        forge.add_pull("vllm-project/vllm", 7, state="closed", merged=True,
                       merge_commit_sha=self.m7, title="Fill indptr padding lanes")
        forge.add_pull("vllm-project/vllm", 8, state="open", title="AITER on HIP")
        forge.add_pull("vllm-project/vllm", 9, state="closed", merged=True,
                       merge_commit_sha=self.m9, title="Scale")
        self.root = tmp / "stack"
        self._make_stack(conflict)

    @property
    def image_repo(self) -> str:
        return f"{self.registry.host}/{REPO}"

    def _make_stack(self, conflict: bool) -> None:
        from patchforge.model.config import UpstreamConfig
        from patchforge.ops.setup import add_upstream, init_project
        from patchforge.project import Project

        root = self.root
        init_project(root, standalone=True)
        add_upstream(Project.discover(root),
                     UpstreamConfig(name="vllm", kind="git", url=str(self.upstream.path),
                                    follow="main",
                                    install_root="/usr/local/lib/python3.12/dist-packages"),
                     self.c0)
        config = root / "patchforge.toml"
        text = config.read_text().replace("https://api.github.com", self.forge.url)
        text = text.replace("[forge]\n", '[forge]\nrepo = "team/stack"\n')
        # The upstream's table is the last one: its forge repository, then a declared check.
        config.write_text(text + 'forge-repo = "vllm-project/vllm"\n'
                                 '\n[checks.compile]\ncommand = ["python3", "-m", "py_compile", '
                                 '"{file}"]\nfiles = "*.py"\n')
        fixes = {
            "fill-indptr.patch": patch_file(
                ATTN, BASE, changed(BASE, INDPTR), "Fill the padding lanes of indptr",
                f"Forwarded: {UPSTREAM_PR.format(7)}\nDrop-When: merged {UPSTREAM_PR.format(7)}\n"),
            "clamp-offset.patch": patch_file(
                ATTN, BASE, changed(BASE, CLAMP), "Clamp the row offset",
                "Keeps: pkg/attn.py: torch.clamp(row.to(torch.int64)\n"),
            "aiter-on-hip.patch": patch_file(
                ATTN, BASE, changed(BASE, AITER), "Use AITER on HIP devices too",
                f"Forwarded: {UPSTREAM_PR.format(8)}\n"),
            "compress.patch": patch_file(OTHER, OTHER_BASE, changed(OTHER_BASE, VALUE),
                                         "Compress the cache"),
            "scale.patch": patch_file(
                ATTN, BASE, BASE.replace(b"return 448.0", b"return 224.0"),
                "FNUZ FP8 maximum", f"Forwarded: {UPSTREAM_PR.format(9)}\n"
                                    f"Drop-When: merged {UPSTREAM_PR.format(9)}\n"),
        }
        if conflict:
            fixes["block-size.patch"] = patch_file(ATTN, BASE, changed(BASE, BLOCK),
                                                   "Smaller default blocks")
            # Still applies, but its drop condition (PR #7 in the target) holds: a person
            # removes it once the nightly is verified.
            fixes["running-offset.patch"] = patch_file(
                ATTN, BASE, BASE.replace(b"    total = 0\n", b"    total = 0  # running offset\n"),
                "Name the running offset", f"Drop-When: merged {UPSTREAM_PR.format(7)}\n")
        directory = root / "series" / "vllm"
        directory.mkdir(parents=True)
        for name, data in fixes.items():
            (directory / name).write_bytes(data)
        (directory / "series").write_text("".join(f"{n}\n" for n in fixes))
        code, out, err = cli_in_process(root, "overlays")
        assert code == 0, err
        # The stack is a git repository with a remote, as on the forge.
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "The stack")
        self.remote = root.parent / "stack-remote.git"
        git(root.parent, "init", "-q", "--bare", str(self.remote))
        git(root, "remote", "add", "origin", str(self.remote))
        git(root, "push", "-q", "origin", "main")

    def bump(self, *args: str) -> tuple[int, str, str]:
        return cli_in_process(self.root, "bump", "--image", self.image_repo, *args)


def cli_in_process(root: Path, *args: str) -> tuple[int, str, str]:
    result = run_cli(root, *args)
    return result.rc, result.out, result.err


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the stack, its own git repository left out."""
    return tree_bytes(root, skip=(".git",))


@pytest.fixture(autouse=True)
def fixed_dates(monkeypatch):
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, "2026-09-10T12:00:00Z")


@pytest.fixture
def clean(tmp_path, registry_server, forge_server) -> Scenario:
    return Scenario(tmp_path, registry_server, forge_server, conflict=False)


def normalized(text: str, scenario: Scenario) -> str:
    return text.replace(scenario.registry.host, "REGISTRY")


def test_tags_list_is_paginated_by_link_and_by_last(registry_server):
    from patchforge.net.http import HttpClient
    from patchforge.net.registry import RegistryClient

    for n in range(7):
        registry_server.push_image(REPO, f"t{n}", {}, index=False)
    client = RegistryClient(HttpClient(Path(os.environ["PATCHFORGE_CACHE"]) / "http"))
    assert client.list_tags(f"{registry_server.host}/{REPO}") == [f"t{n}" for n in range(7)]
    pages = [p for p in registry_server.paths("GET") if "/tags/list" in p]
    # The last linked page, which has no Link, is followed by asking after its last tag
    # (an empty page ends the listing).
    assert len(pages) == 4 and "last=t2" in pages[1] and "last=t5" in pages[2] \
        and "last=t6" in pages[3]
    # A registry that sends no Link: a full page is followed by asking after its last tag.
    registry_server.tags_link = False
    assert client.list_tags(f"{registry_server.host}/{REPO}", page_size=3) == \
        [f"t{n}" for n in range(7)]
    # ... and so is a page the registry capped below `n` (3 of the 1000 asked for), which
    # ended the listing: bump said "up to date" while newer nightlies waited.
    assert client.list_tags(f"{registry_server.host}/{REPO}") == [f"t{n}" for n in range(7)]


@pytest.mark.parametrize("answer", [b"[]", b"{}", b'{"errors": [{"code": "DENIED"}]}'])
def test_a_tags_answer_that_is_no_tags_list_is_an_error_not_an_empty_list(registry_server,
                                                                          answer):
    """A proxy's or mirror's 200 JSON that is no tags document was read as a repository
    without tags: bump said "up to date", exit 0. An error naming the registry now (only
    `"tags": null` means no tags, as the distribution spec allows)."""
    from helpers.servers import Answer
    from patchforge.errors import NetworkError
    from patchforge.net.http import HttpClient
    from patchforge.net.registry import RegistryClient

    registry_server.push_image(REPO, "t0", {}, index=False)
    served = registry_server.route
    registry_server.route = lambda method, path, query, req: Answer(
        200, answer, {"Content-Type": "application/json"}) if "/tags/list" in path else \
        served(method, path, query, req)
    client = RegistryClient(HttpClient(Path(os.environ["PATCHFORGE_CACHE"]) / "http"))
    with pytest.raises(NetworkError, match="is not a tags list"):
        client.list_tags(f"{registry_server.host}/{REPO}")


def test_dry_run_writes_nothing_and_plans_the_move(clean):
    before = snapshot(clean.root)
    code, out, err = clean.bump("--dry-run", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert snapshot(clean.root) == before  # file by file: not one byte written
    assert doc["outcome"] == "planned" and doc["needs_person"] is False
    target = doc["target"]
    assert target["tag"] == f"nightly-{clean.c3}" and target["commit"] == clean.c3
    assert target["digest"] == clean.images[clean.c3]["digest"]
    assert target["published"] == "2026-09-12T05:27:48Z"
    search = doc["search"]
    assert search["listed"] == 8 and search["nightly"] == 4  # nightly-rocm7.0 is not one
    assert search["newer"] == [f"nightly-{clean.c3}", f"nightly-{clean.older}"]
    assert search["skipped"] == [{"tag": f"nightly-{clean.foreign}", "reason":
                                  f"its commit {clean.foreign[:12]} is not in the upstream's main"}]
    fixes = {f["name"]: f for f in doc["fixes"]}
    assert fixes["fill-indptr.patch"]["outcome"] == "dropped"
    assert fixes["compress.patch"]["landed_through"] == UPSTREAM_PR.format(11)
    assert fixes["clamp-offset.patch"]["outcome"] == "offset"
    pr7 = fixes["fill-indptr.patch"]["pull_request"]
    assert (pr7["merged"], pr7["included"], pr7["behind_by"]) == (True, True, 0)
    assert pr7["ahead_by"] == 2  # c2 and c3 after the merge commit
    pr9 = fixes["scale.patch"]["pull_request"]
    assert pr9["included"] is False and pr9["ahead_by"] == 0 and pr9["behind_by"] == 2
    assert fixes["aiter-on-hip.patch"]["pull_request"]["state"] == "open"
    assert doc["checks"]["ran"] is False and doc["rebase"]["written"] is False
    # --open-pr with --dry-run only says what it would do: nothing committed, pushed or sent.
    code, out, err = clean.bump("--dry-run", "--open-pr", "--json")
    assert code == 0, err
    assert json.loads(out)["pull_request"] == {
        "action": "planned", "branch": f"patchforge/bump-nightly-{clean.c3}",
        "repo": "team/stack", "base": "main",
        "title": f"Bump vllm to nightly-{clean.c3} (2 landed)", "commit": None, "number": None,
        "url": None}
    assert snapshot(clean.root) == before
    assert git(clean.remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
    assert [r.method for r in clean.forge.requests if r.method != "GET"] == []


def test_quiet_bump_says_no_title(clean):
    """`bump`'s title line on stderr (the report is stdout's) is no error, and came out under
    `-q`, which says errors only: it is dropped there, stdout and the exit code the same."""
    plain = clean.bump("--dry-run")
    quiet = cli_in_process(clean.root, "-q", "bump", "--image", clean.image_repo, "--dry-run")
    assert plain[0] == 0 and plain[2].strip(), plain
    assert quiet[2] == "" and quiet[:2] == plain[:2], quiet


def test_the_images_created_text_is_shown_in_the_report_never_rendered(clean):
    # Whoever built the nightly chose its `created`: a link, a remote image, HTML, a line
    # break and a terminal escape in it reached the pull request's body as Markdown.
    created = ("2026-09-12T05:27:48Z | [click](https://evil.example/x) "
               "![t](https://evil.example/pixel.png) <img src=x>\n## Injected\x1b[31m")
    files = {p: clean.upstream.read(p, clean.c3) for p in (ATTN, OTHER)}
    clean.registry.push_image(REPO, f"nightly-{clean.c3}",
                              {"vllm.commit": clean.c3, "org.opencontainers.image.version":
                               "0.0.dev"}, created=created, layers=(layer(files),))
    code, out, err = clean.bump("--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    # One code span, the whole text in it, shown: the pipe escaped for the table, the line
    # break and the escape written visible.
    assert ("| published | `2026-09-12T05:27:48Z \\| [click](https://evil.example/x) "
            "![t](https://evil.example/pixel.png) <img src=x>\\x0a## Injected\\x1b[31m` |"
            ) in lines
    assert [line for line in lines if "evil.example" in line or "Injected" in line] == \
        [line for line in lines if line.startswith("| published |")]
    # The document keeps the value as the registry served it.
    code, out, err = clean.bump("--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["target"]["published"] == created


def test_what_a_registry_and_a_forge_answer_is_shown_in_the_report_never_rendered(clean):
    """Text a registry or a forge chose reaches the report's cells: a nightly's image index
    naming its platforms (quoted in the reason it was skipped), a forge's answer about a pull
    request (quoted in the fix's evidence). Only `<` was escaped there: a `[x](url)` was a
    link in the stack's pull request and the job summary, `![t](url)` a remote image, a line
    break then `## x` a heading of its own, a `|` a cell end. Each is shown exactly now,
    rendered as nothing; GitHub's own autolinks (`https://`, `www.`) are stopped too."""
    from markdown_it import MarkdownIt

    hostile = ("[click](https://evil.example/x) ![t](https://evil.example/p.png) "
               "<img src=x> www.evil.example *b* `c` _u_ ~~s~~ &amp; | cut\n## Injected")
    # The newest nightly, as a registry may serve it: an index whose one image is of a
    # platform named by that text (no linux/amd64 in it): skipped, the reason naming it.
    clean.registry.push_image(REPO, f"nightly-{clean.m9}", {"vllm.commit": clean.m9},
                              platforms=((hostile, "arm64"),))
    # The forge answers a state no pull request has: the fix's evidence quotes it.
    clean.forge.pulls[("vllm-project/vllm", 8)]["state"] = "[x](//evil.example)"
    code, report, err = clean.bump("--dry-run")
    assert code == 0, err
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(report)
    assert "<img" not in page and "Injected</h" not in page, page
    # (The links are the report's own: the pull requests the fixes landed through.)
    assert all(href.startswith("https://github.com/vllm-project/vllm/pull/")
               for href in re.findall(r'<a href="([^"]*)"', page)), page
    # The skip reason shows the text exactly, control characters written visible.
    shown = hostile.replace("<", "&lt;").replace(">", "&gt;").replace("&amp;", "&amp;amp;") \
        .replace("\n", "\\x0a")
    assert shown in page, page
    assert "state &#x27;[x](//evil.example)&#x27;" in page or \
        "state '[x](//evil.example)'" in page, page
    # The headings and table rows are the report's own: none made by the text.
    assert page.count("<h2>") == 1 and page.count("<h3>") == report.count("\n### ")
    rows = [line for line in report.splitlines() if line.startswith("| ")]
    assert page.count("<tr>") == len(rows)
    # GitHub links a bare URL and `www.` by itself (markdown-it's CommonMark does not): the
    # Markdown holds neither outside code.
    assert "s://evil" not in report and "www.evil" not in report, report
    assert "https\\://evil.example/x" in report and "www\\.evil.example" in report, report


def test_a_mention_or_an_issue_reference_a_forge_answer_quotes_is_shown_never_made(clean):
    """A forge's answer quoted in the report (a pull request's state) holding `@name` or
    `owner/repo#N`: in the stack's pull request GitHub made a mention of it (notifying that
    user) and a cross-reference (an event on that issue), which no Markdown escape stops
    (GitHub finds them in the text it shows). An empty HTML comment after the `@` and the
    `#` splits that text: the page shows the answer exactly, and no run of its text is a
    mention or a reference."""
    from markdown_it import MarkdownIt

    from helpers.rendered import GITHUB_REFERENCE, shown_text, text_runs

    quoted = "@bot o/r#12 #3 GH-5"  # (the answer quotes a state's first 20 characters)
    clean.forge.pulls[("vllm-project/vllm", 8)]["state"] = quoted
    code, report, err = clean.bump("--dry-run")
    assert code == 0, err
    assert "@<!-- -->bot o/r#<!-- -->12 #<!-- -->3 GH-<!-- -->5" in report, report
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(report)
    assert quoted in shown_text(page), page
    for run in text_runs(page):
        assert not GITHUB_REFERENCE.search(run), (run, page)


@pytest.mark.parametrize("url, opened", [
    ("git@github.com:team/stack.git", True),
    ("ssh://git@ssh.github.com:443/team/stack.git", True),
    ("git@ghe.example.com:team/stack.git", False),
    ("https://ghe.example.com/team/stack", False),
])
def test_the_stack_repository_read_from_a_remote_of_another_forge_is_refused(clean, url,
                                                                             opened):
    """Without forge.repo, `bump --open-pr` reads OWNER/NAME from the remote's URL, and asked
    the configured forge about it whatever host the remote is on: a stack kept on a GitHub
    Enterprise would have had its pull request opened on github.com's team/stack, another
    repository. A remote on a host the forge does not answer for is refused, naming both."""
    config = clean.root / "patchforge.toml"
    config.write_text(config.read_text().replace('repo = "team/stack"\n', ""))
    git(clean.root, "remote", "set-url", "origin", url)
    code, out, err = clean.bump("--dry-run", "--open-pr", "--json")
    if opened:
        assert code == 0, err
        assert json.loads(out)["pull_request"]["repo"] == "team/stack"
    else:
        assert code == 2, (out, err)
        assert "remote origin is on ghe.example.com" in err and "github.com" in err, err
    assert [r.method for r in clean.forge.requests if r.method != "GET"] == []


def test_real_run_moves_the_stack_file_by_file_and_opens_the_pull_request(clean):
    before = snapshot(clean.root)
    head = git(clean.root, "rev-parse", "HEAD").strip()
    code, out, err = clean.bump("--open-pr")
    assert code == 0, err
    after = snapshot(clean.root)
    series = "series/vllm/"
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    modified = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    # No fix touches other.py any more: its overlay goes with the fix that landed.
    assert removed == ["overlays/vllm/pkg/other.py", series + "compress.patch",
                       series + "fill-indptr.patch"]
    # The ledger appears with the first change of the series (the fixture never made one).
    assert [p for p in added if not p.startswith(".patchforge/")] == [
        "series/PATCHES.md", "series/history.jsonl",
        series + "upstreamed/compress.patch", series + "upstreamed/fill-indptr.patch"]
    assert {p for p in added if p.startswith(".patchforge/")} >= {
        ".patchforge/bump/report.md", ".patchforge/bump/report.json"}
    # The fixes that stay moved (upstream added a header above them): re-made at new lines.
    # (Besides .patchforge/overlays-written.sha256, the record of what overlays/ holds now.)
    assert modified == [".patchforge/overlays-written.sha256", "overlays/Dockerfile", "overlays/SHA256SUMS", "overlays/compose.yaml",
                        "overlays/manifest.json",
                        "overlays/vllm/pkg/attn.py", series + "aiter-on-hip.patch",
                        series + "clamp-offset.patch", series + "scale.patch",
                        series + "series", "upstream.lock"]
    # The lock: the new commit, and the image pinned by digest.
    lock = json.loads(after["upstream.lock"])
    assert lock["upstreams"]["vllm"]["commit"] == clean.c3
    assert lock["image"]["digest"] == clean.images[clean.c3]["digest"]
    assert lock["image"]["tag"] == f"nightly-{clean.c3}"
    # The image the overlays are baked into is the new nightly, by digest.
    assert f"{clean.image_repo}@{clean.images[clean.c3]['digest']}".encode() in \
        after["overlays/Dockerfile"]
    # The series: the landed fixes left, the others stay in order.
    assert after[series + "series"] == (b"clamp-offset.patch\naiter-on-hip.patch\n"
                                        b"scale.patch\n")
    assert b"Applied-Upstream:" in after[series + "upstreamed/fill-indptr.patch"]
    # The overlay is the new upstream file with the remaining fixes, as git applies them.
    new_attn = clean.upstream.read(ATTN, clean.c3)
    expected = changed(new_attn, CLAMP, AITER).replace(b"return 448.0", b"return 224.0")
    assert after["overlays/vllm/pkg/attn.py"] == expected
    subprocess.run(["sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS"],
                   cwd=clean.root / "overlays", check=True)
    # The user's checkout is untouched; the branch holds exactly the bump's files.
    assert git(clean.root, "rev-parse", "HEAD").strip() == head
    branch = f"patchforge/bump-nightly-{clean.c3}"
    pushed = git(clean.remote, "rev-parse", branch).strip()
    assert git(clean.remote, "show", f"{pushed}:upstream.lock").encode() == \
        after["upstream.lock"]
    assert git(clean.remote, "rev-parse", f"{pushed}^").strip() == head
    posts = [r for r in clean.forge.requests if r.method == "POST"]
    assert len(posts) == 1
    sent = json.loads(posts[0].body)
    report = after[".patchforge/bump/report.md"].decode()
    assert sent["head"] == branch and sent["base"] == "main" and sent["body"] == report
    assert sent["title"] == f"Bump vllm to nightly-{clean.c3} (2 landed)"
    # The report, against the golden file.
    check_golden("bump-report.md", normalized(report, clean))
    assert out == report
    doc = json.loads(after[".patchforge/bump/report.json"])
    assert validation_errors(doc, "bump") == []
    assert doc["pull_request"]["action"] == "opened" and doc["checks"]["ok"] is True
    # What a registry, git or a patch says reaches the pull request's body as text: GitHub
    # renders raw HTML there, and a `<!--` in a skip reason would hide the rest of the report.
    from patchforge.ops.bump_report import render_markdown
    hostile = "<!-- <img src=x> <details>"
    doc.setdefault("notes", []).append(hostile)
    doc["fixes"][0]["evidence"].append(hostile)
    doc["search"] = {"listed": 2, "nightly": 2, "repository": "r", "newer": ["t"],
                     "not_newer": 0, "skipped": [{"tag": "t", "reason": hostile}]}
    # So does a check's files (named by patches): they were written raw. The image's `created`
    # (any string a registry serves) is a code span: shown, none of it rendered (the test
    # below meets it through the command).
    doc["target"]["published"] = "2026-09-12T05:27:48Z " + hostile + " | x"
    doc["checks"]["results"][0]["files"] = [hostile]
    # A landing's pull request is a link where the address is one as patchforge makes it, read
    # by the forge's own grammar: `.` for a repository's owner (no forge has it) is text.
    landed = next(f for f in doc["fixes"] if f.get("landed_through"))
    kept_url = landed["landed_through"]
    assert f"<{kept_url}>" in render_markdown(doc)
    for url in ("https://github.com/./r/pull/1", "https://github.com/o/r/pull/01",
                "https://github.com/o/r/pull/1/files"):
        landed["landed_through"] = url
        assert f"<{url}>" not in render_markdown(doc), url
    landed["landed_through"] = kept_url
    lines = render_markdown(doc).splitlines()
    assert "| published | `2026-09-12T05:27:48Z <!-- <img src=x> <details> \\| x` |" in lines
    # Rendered as CommonMark with raw HTML, as the forge renders it: the text shown, obeyed
    # nowhere.
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(
        render_markdown(doc))
    # (The only comments are the report's own empty ones, which stop GitHub's references.)
    assert "<!--" not in rendered.replace("<!-- -->", "") and "<img" not in rendered \
        and "<details>" not in rendered
    assert rendered.count("&lt;!-- &lt;img src=x&gt; &lt;details&gt;") == 5
    # The range-diff's block is closed only after the whole range-diff, whatever runs of
    # backticks it quotes (a failed range-diff says git's message, a line of its own).
    text = "(no range-diff: git said\n```\n" + hostile + "\n`````\nand more)"
    doc["rebase"]["range_diff"] = text + "\n"
    assert _fenced_blocks(render_markdown(doc)) == [text]
    # Again, now up to date: the same pull request is updated, not a second one opened.
    code, out, err = clean.bump("--to", f"nightly-{clean.c3}", "--open-pr", "--json")
    assert code == 0, err
    again = json.loads(out)
    assert again["outcome"] == "up-to-date" and again["pull_request"]["action"] == "updated"
    assert len([r for r in clean.forge.requests if r.method == "POST"]) == 1


def _shown(markdown: str) -> str:
    """The text a reader sees of `markdown`, rendered as CommonMark with tables (the notes are
    escaped so that nothing in them renders: read as shown, not as written)."""
    import html

    from markdown_it import MarkdownIt

    page = MarkdownIt("commonmark").enable("table").render(markdown)
    return html.unescape(re.sub(r"<[^>]*>", "", page))


def _fenced_blocks(markdown: str) -> list[str]:
    """The contents of the backtick-fenced code blocks of `markdown`, read as CommonMark reads
    them: an opening fence of three or more backticks (indented at most three spaces), closed
    by the first line of at least as many backticks and nothing else."""
    import re

    blocks, lines, at = [], markdown.split("\n"), 0
    while at < len(lines):
        opening = re.fullmatch(r" {0,3}(`{3,})[^`]*", lines[at])
        at += 1
        if not opening:
            continue
        body = []
        while at < len(lines) and not re.fullmatch(r" {0,3}`{%d,} *" % len(opening.group(1)),
                                                   lines[at]):
            body.append(lines[at])
            at += 1
        at += 1
        blocks.append("\n".join(body))
    return blocks


def test_a_forge_failure_after_the_move_keeps_the_report_and_the_next_run_opens_it(clean):
    """The forge answers 502 after the bump moved the stack and pushed its branch: the report
    (the pull request's body) was neither printed nor kept, and the next `bump --open-pr`
    said "nothing to move" (titled "Bump vllm to ?"), exit 0, never opening the pull request.
    The report is kept and printed with the error, which names the way on; that run opens
    the pull request with the kept report and says so."""
    clean.forge.misbehave("status", path="/repos/team/stack/pulls", times=20, status=502)
    code, out, err = clean.bump("--open-pr")
    assert code == 75 and "502" in err, err
    assert f"the stack moved to nightly-{clean.c3}" in err and "--open-pr` opens its pull" in err
    kept = clean.root / ".patchforge" / "bump" / "report.md"
    assert kept.is_file() and f"## Bump vllm to nightly-{clean.c3}" in out
    assert kept.read_text() == out
    clean.forge.misbehaviours.clear()
    # A plain bump in between (someone checks by hand: nothing newer) keeps that report.
    code, _, err = clean.bump()
    assert code == 0 and "its pull request was never opened" in err, err
    assert kept.read_text().startswith(f"## Bump vllm to nightly-{clean.c3}")
    code, out, err = clean.bump("--open-pr")
    assert code == 0, err
    assert "## Bump vllm: on the newest nightly already" in out and "to ?" not in out
    assert "opened the pull request of the earlier bump" in err, err
    posts = [r for r in clean.forge.requests if r.method == "POST"
             and r.path == "/repos/team/stack/pulls"]
    assert len(posts) == 1 and json.loads(posts[0].body)["body"] == kept.read_text()
    code, _, err = clean.bump("--open-pr")  # opened now: nothing more to propose
    assert code == 0 and "earlier bump" not in err
    assert len([r for r in clean.forge.requests if r.method == "POST"
                and r.path == "/repos/team/stack/pulls"]) == 1


def test_conflict_leaves_the_rebase_stopped_and_needs_a_person(tmp_path, registry_server,
                                                               forge_server):
    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    before = snapshot(scenario.root)
    code, out, err = scenario.bump("--dry-run", "--json")
    assert code == 1
    assert snapshot(scenario.root) == before
    doc = json.loads(out)
    fixes = {f["name"]: f for f in doc["fixes"]}
    assert fixes["block-size.patch"]["outcome"] == "conflict"
    kept = fixes["running-offset.patch"]
    assert kept["outcome"] == "offset" and kept["needs_person"] and kept["drop_when"]["true"]
    assert any("Drop-When merged" in line and "still in the series" in line
               for line in kept["evidence"])
    # The Markdown says so too, and marks both.
    from patchforge.ops.bump_report import render_markdown
    markdown = render_markdown(doc)
    assert markdown.count(" ⚠ |") == 2 and "**A person is needed** (dry run" in markdown
    code, out, err = scenario.bump("--open-pr", "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "stopped" and doc["needs_person"]
    assert "block-size.patch" in doc["rebase"]["stopped"]["message"]
    assert doc["pull_request"]["action"] == "not opened"
    after = snapshot(scenario.root)
    # The project files are as they were; the rebase waits in its journal and worktree.
    assert {p: b for p, b in after.items() if not p.startswith(".patchforge/")} == \
        {p: b for p, b in before.items() if not p.startswith(".patchforge/")}
    assert (scenario.root / ".patchforge/rebase/journal.json").exists()
    assert b"<<<<<<<" in (scenario.root / ".patchforge/work/vllm" / ATTN).read_bytes()
    assert not [r for r in forge_server.requests if r.method == "POST"]
    # While the rebase waits, a second bump refuses and says how to go on.
    code, _, err = scenario.bump("--dry-run")
    assert code == 2 and "rebase --continue" in err
    # The stop is the rebase's: --abort puts everything back.
    code, _, err = cli_in_process(scenario.root, "rebase", "--abort")
    assert code == 0, err
    assert snapshot(scenario.root).keys() >= before.keys()
    assert {p: snapshot(scenario.root)[p] for p in before} == before


def test_an_image_whose_files_are_not_the_new_base_needs_a_person(clean):
    """The nightly's image holds another attn.py than the commit its tag names: the move is
    made (the series is right for the commit), but the overlays would go over a file they
    were not made for, so the verification fails and the bump exits 1."""
    clean.registry.push_image(REPO, f"nightly-{clean.c3}", {"vllm.commit": clean.c3},
                              layers=(layer({ATTN: clean.upstream.read(ATTN, clean.c1)}),))
    code, out, err = clean.bump("--json")
    assert code == 1, err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "moved" and doc["needs_person"] and doc["checks"]["ok"]
    verification = doc["verification"]
    assert verification["status"] == "failed"
    assert verification["files"][0] == {"path": f"/{INSTALL_ROOT}/{ATTN}", "status": "mismatch",
                                        "detail": verification["files"][0]["detail"]}
    # (The image moved to is now the pin: its file is not the upstream's at the revision its
    # label names.)
    assert "the pinned image is not the upstream's file at the pinned revision" in \
        verification["files"][0]["detail"]
    # The image lacks other.py, where compress.patch landed: no overlay carries it either.
    assert verification["files"][1:] == [{
        "path": f"/{INSTALL_ROOT}/{OTHER}", "status": "missing",
        "detail": "not in the image; vllm/upstreamed/compress.patch landed upstream in this "
                  "file (no layer holds it)"}]


def test_a_nightly_whose_file_lacks_a_fix_judged_landed_needs_a_person(clean):
    """The series is judged on the commit the nightly's label names (a wheel upstream's: on the
    wheel its version label names), not on the image's own files. The nightly's other.py is
    the one before the fix compress.patch landed (a re-spun or another build of that commit):
    the bump dropped the fix as landed, said "moved cleanly" and verification "passed" (only
    the overlaid files were read), and `verify --image` of the pinned image said the landed
    fixes "are in it by the pin", exit 0: the container ran without the fix. Now the landed
    fix's file is read in the image, in the same pass: the bump needs a person, naming the
    file and the fix, and `verify --image` fails."""
    c3 = clean.c3
    clean.registry.push_image(REPO, f"nightly-{c3}", {"vllm.commit": c3}, layers=(layer({
        ATTN: clean.upstream.read(ATTN, c3), OTHER: clean.upstream.read(OTHER, clean.c0)}),))
    code, out, err = clean.bump("--json")
    assert code == 1, err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "moved" and doc["needs_person"] and doc["checks"]["ok"]
    assert {f["path"]: f["status"] for f in doc["verification"]["files"]} == {
        f"/{INSTALL_ROOT}/{ATTN}": "ok", f"/{INSTALL_ROOT}/{OTHER}": "mismatch"}
    assert doc["verification"]["status"] == "failed"
    assert f"1 without the fix, which no overlay carries (/{INSTALL_ROOT}/{OTHER}: " \
        "vllm/upstreamed/compress.patch)" in doc["verification"]["detail"], doc["verification"]
    lock = json.loads((clean.root / "upstream.lock").read_text())
    assert lock["image"]["tag"] == f"nightly-{c3}"
    code, out, err = cli_in_process(clean.root, "verify", "--image")
    assert code == 1, out + err
    assert "1 of 2 fixes dropped as landed upstream are in it; not: " \
        "vllm/upstreamed/compress.patch" in out, out
    assert "by the pin" not in out + err
    assert "the image upstream.lock pins does not hold the upstream's files" in err, err


def test_a_move_off_the_pinned_image_drops_the_image_pin(clean):
    """After a bump, upstream.lock pins the nightly's image. A `rebase --to` a later commit (a
    release, a commit: no image) that drops a fix as landed after that nightly kept the image
    pin: the compose fragment and Dockerfile still named the nightly, which lacks the fix, and
    `verify --image` vouched for it "by the pin", exit 0. Now the move drops the image pin,
    saying so, the overlays name no pinned image, and `verify --image` asks for one; a pin
    moved by `upstream pin --force` does the same."""
    code, _, err = clean.bump()
    assert code == 0, err
    root, up = clean.root, clean.upstream
    assert json.loads((root / "upstream.lock").read_text())["image"]["tag"] == \
        f"nightly-{clean.c3}"
    base = up.read(OTHER, clean.c3)
    fixed = base.replace(b"    return VALUE\n", b"    return VALUE  # fixed\n")
    series = root / "series" / "vllm"
    (series / "other-fix.patch").write_bytes(patch_file(OTHER, base, fixed, "Fix other()"))
    (series / "series").write_text((series / "series").read_text() + "other-fix.patch\n")
    code, _, err = cli_in_process(root, "overlays")
    assert code == 0, err
    c4 = Upstream.commit(up, {OTHER: up.read(OTHER, "HEAD").replace(b"    return VALUE\n",
                                                          b"    return VALUE  # fixed\n")},
                   "Fix other() (#12)")
    code, out, err = cli_in_process(root, "rebase", "--to", f"vllm={c4}", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert validation_errors(doc, "rebase") == []
    assert {p["name"]: p["action"] for p in doc["patches"]}["other-fix.patch"] == "dropped"
    assert doc["image_unpinned"] == {
        "reference": f"{clean.image_repo}:nightly-{clean.c3}",
        "digest": clean.images[clean.c3]["digest"]}
    lock = json.loads((root / "upstream.lock").read_text())
    assert lock["upstreams"]["vllm"]["commit"] == c4 and "image" not in lock
    fragment = (root / "overlays" / "compose.yaml").read_text()
    assert clean.images[clean.c3]["digest"] not in fragment, fragment
    assert clean.images[clean.c3]["digest"] not in (root / "overlays" / "Dockerfile").read_text()
    code, out, err = cli_in_process(root, "verify", "--image")
    assert code == 2 and "no image to verify against" in err, out + err
    # Back onto the nightly's image, then off it by `upstream pin --force`: said the same way.
    code, out, err = cli_in_process(root, "rebase", "--to", f"vllm={clean.image_repo}:"
                                                            f"nightly-{clean.c3}")
    assert json.loads((root / "upstream.lock").read_text())["image"]["tag"] == \
        f"nightly-{clean.c3}", out + err
    code, out, err = cli_in_process(root, "upstream", "pin", "vllm", "--at", c4, "--force")
    assert code == 0, err
    assert f"note: upstream.lock no longer pins the image {clean.image_repo}:nightly-" \
        f"{clean.c3}" in out, out
    assert "image" not in json.loads((root / "upstream.lock").read_text())
    # `upstream pin` does not write the overlays: they name the image until `overlays` (the
    # note said "the overlays name no pinned image" while compose.yaml still named it).
    assert clean.images[clean.c3]["digest"] in (root / "overlays" / "compose.yaml").read_text()
    assert "the overlays still name it until `patchforge overlays` makes them again" in out, out
    code, _, err = cli_in_process(root, "overlays")
    assert code == 0, err
    assert clean.images[clean.c3]["digest"] not in (root / "overlays" / "compose.yaml").read_text()


def test_a_bump_to_a_commit_off_the_pinned_image_says_it_drops_the_pin(clean):
    """`bump vllm --to COMMIT` (the way bump's own hint names when tonight's image cannot be
    looked up, and the workflow's `to` input) dropped the image pin last night's bump made, and
    the fragment's `image:` with it, while the report said only "The stack moved cleanly." and
    nothing in its notes, stderr or --json named the pin. The verdict and the notes say it now,
    in the dry run too, and the document carries `image_unpinned`."""
    code, _, err = clean.bump()
    assert code == 0, err
    root, up = clean.root, clean.upstream
    pinned = f"{clean.image_repo}:nightly-{clean.c3}"
    assert json.loads((root / "upstream.lock").read_text())["image"]["reference"] == pinned
    c4 = Upstream.commit(up, {OTHER: up.read(OTHER, "HEAD") + b"# a later commit\n"}, "Later")
    for dry, says in ((True, "will no longer pin"), (False, "no longer pins")):
        code, out, err = clean.bump("--to", c4, "--json", *(["--dry-run"] if dry else []))
        assert code in (0, 1), err  # 1: a Drop-When that holds
        doc = json.loads(out)
        assert validation_errors(doc, "bump") == []
        assert doc["rebase"]["image_unpinned"]["reference"] == pinned
        assert any(n.startswith(f"upstream.lock {says} the image {pinned}")
                   for n in doc["notes"]), doc["notes"]
    assert "image" not in json.loads((root / "upstream.lock").read_text())
    markdown = (root / ".patchforge" / "bump" / "report.md").read_text()
    assert f"upstream.lock no longer pins the image `{pinned}`: see the notes." in \
        markdown.split("\n\n", 3)[2], markdown  # the verdict
    assert f"> upstream.lock no longer pins the image {pinned}" in markdown, markdown


def test_bad_input_exits_2(clean):
    code, _, err = clean.bump("--to", "nightly-" + "0" * 40)
    assert code == 2, err
    code, _, err = cli_in_process(clean.root, "bump", "nosuch")
    assert code == 2 and "nosuch" in err



def test_a_repository_without_nightly_tags_is_refused_not_called_up_to_date(clean, tmp_path):
    """`bump --image REPO` on a repository that lists no `nightly-<40 hex>` tag (a mistyped or
    wrong repository, nightlies tagged otherwise) said "on the newest nightly already", exit 0:
    the scheduled job stayed green every night while no fix was ever judged against a new
    upstream. Refused, exit 2, naming the repository and the tag form, nothing written; the
    action's summary says the bump failed."""
    import shutil

    import yaml

    other = f"{clean.registry.host}/team/app"
    for tag in ("latest", "v0.1.0", "nightly", "nightly-abc1234"):
        clean.registry.push_image("team/app", tag, {})
    before = snapshot(clean.root)
    code, out, err = cli_in_process(clean.root, "bump", "vllm", "--image", other)
    assert code == 2, (out, err)
    assert "newest nightly already" not in out + err
    assert f"no nightly in {other}: none of its 4 tags is of the form nightly-<40 hex>" in err, err
    assert "check that --image REPO names the repository" in err and "--to SPEC" in err
    code, out, err = cli_in_process(clean.root, "bump", "vllm", "--image", other, "--json")
    assert code == 2 and json.loads(out)["error"]["exit_code"] == 2, (out, err)
    # The configured `image` as the repository: the hint names it.
    config = clean.root / "patchforge.toml"
    config.write_text(f'image = "{other}:latest"\n' + config.read_text())
    code, out, err = cli_in_process(clean.root, "bump", "vllm", "--dry-run")
    assert code == 2 and "the repository of the configured `image`" in err, (out, err)
    config.write_bytes(before["patchforge.toml"])
    assert snapshot(clean.root) == before
    # The nightly job: the action's step fails, its summary says why.
    action = yaml.safe_load((REPO_ROOT / "actions" / "bump" / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "bump")
    runner = tmp_path / "runner"
    runner.mkdir()
    output, summary = runner / "output", runner / "summary"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "patchforge").write_text(f"#!/bin/sh\nexec {shutil.which('python3')} -m "
                                        "patchforge \"$@\"\n")
    (bin_dir / "patchforge").chmod(0o755)
    env = {**os.environ, "RUNNER_TEMP": str(runner), "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary), "INPUT_UPSTREAM": "vllm", "INPUT_TO": "",
           "INPUT_IMAGE": other, "INPUT_OPEN_PR": "true", "INPUT_DRY_RUN": "false",
           "INPUT_FAIL": "true", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=clean.root,
                          env=env, capture_output=True)
    assert proc.returncode == 2, proc.stderr.decode()
    assert "exit-code=2" in output.read_text().splitlines()
    assert summary.read_text().startswith("## Bump failed (exit 2)\n\nno nightly in "), \
        summary.read_text()
    assert snapshot(clean.root) == before


def test_without_a_history_to_order_nightlies_it_says_so_before_asking_the_registry(
        tmp_path, registry_server):
    """A `dir` (or wheel) upstream with no `git-url`: bump found no nightly tag in the
    registry and said the stack was up to date (exit 0), and with the registry out of reach it
    said only that, after a minute of retries. The missing history is said first, exit 2,
    naming the setting, and the registry is not asked."""
    root = tmp_path / "stack"
    source = tmp_path / "site"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_bytes(b"a = 1\n")
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "site", "--dir", str(source), "--at", "v1")
    registry_server.push_image(REPO, "latest", {})
    before = snapshot(root)
    code, out, err = cli_in_process(root, "bump", "--image", f"{registry_server.host}/{REPO}",
                                    "--dry-run")
    assert code == 2, (out, err)
    assert "upstream site has no git history to order nightlies by" in err
    assert "`git-url` under [tool.patchforge.upstreams.site]" in err
    assert not [p for p in registry_server.paths() if "/tags/list" in p]
    assert snapshot(root) == before


def test_to_takes_the_upstream_prefix_rebase_to_takes(clean):
    """`bump vllm --to vllm=nightly-<sha>`, the form `rebase --to` takes, was resolved as a ref
    named `vllm=nightly-<sha>` ("cannot resolve vllm=vllm=..."). It is vllm's SPEC; another
    upstream's name there is refused naming it."""
    code, out, err = clean.bump("--to", f"vllm=nightly-{clean.c3}", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["target"]["commit"] == clean.c3
    before = snapshot(clean.root)
    code, _, err = clean.bump("--to", f"aiter=nightly-{clean.c3}", "--dry-run")
    assert code == 2 and f"unknown upstream 'aiter' in 'aiter=nightly-{clean.c3}' (known: " \
        "vllm)" in err, err
    code, _, err = clean.bump("--to", "vllm= ", "--dry-run")
    assert code == 2 and "empty SPEC for upstream 'vllm'" in err, err
    assert snapshot(clean.root) == before
    # A second upstream configured: naming it is refused, saying how to bump that one.
    config = clean.root / "patchforge.toml"
    config.write_text(config.read_text() + f'\n[upstreams.aiter]\nkind = "git"\n'
                                           f'url = "{clean.upstream.path}"\n')
    before = snapshot(clean.root)
    for spec in (f"aiter=nightly-{clean.c3}", "aiter="):
        code, _, err = cli_in_process(clean.root, "bump", "vllm", "--image", clean.image_repo,
                                      "--to", spec, "--dry-run")
        assert code == 2 and f"bump moves vllm, and --to {spec!r} names aiter" in err, err
        assert f"`patchforge bump aiter --to {spec.partition('=')[2]}`" in err, err
    assert snapshot(clean.root) == before


def test_the_reusable_action_runs_bump_and_reports_as_github_actions_expects(clean, tmp_path):
    """The action's own script, run by bash as a runner would (GITHUB_OUTPUT, the step summary,
    RUNNER_TEMP), on the stack; the documented workflow uses that action."""
    import shutil

    import yaml

    action = yaml.safe_load((REPO_ROOT / "actions" / "bump" / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "bump")
    # A stack in a subdirectory: the bump runs there, as the check action (action.yml) does.
    check = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    assert action["inputs"]["working-directory"]["default"] == \
        check["inputs"]["working-directory"]["default"] == "."
    assert step["working-directory"] == "${{ inputs.working-directory }}"
    workflow = yaml.safe_load((REPO_ROOT / "docs" / "workflows" / "patchforge-bump.yml").read_text())
    uses = [s.get("uses", "") for s in workflow["jobs"]["bump"]["steps"]]
    assert any(u.endswith("/actions/bump@main") for u in uses)
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}
    runner = tmp_path / "runner"
    runner.mkdir()
    output, summary = runner / "output", runner / "summary"
    env = {**os.environ, "RUNNER_TEMP": str(runner), "GITHUB_OUTPUT": str(output),
           "GITHUB_STEP_SUMMARY": str(summary), "INPUT_UPSTREAM": "vllm", "INPUT_TO": "",
           "INPUT_IMAGE": clean.image_repo, "INPUT_OPEN_PR": "true", "INPUT_DRY_RUN": "false",
           "INPUT_FAIL": "true",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                       os.environ.get("PYTHONPATH")]))}
    # `patchforge` as installed: this checkout's package through its console entry point.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "patchforge").write_text(f"#!/bin/sh\nexec {shutil.which('python3')} -m "
                                        "patchforge \"$@\"\n")
    (bin_dir / "patchforge").chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=clean.root, env=env,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == "0"
    report = Path(outputs["report"]).read_text()
    assert summary.read_text() == report
    check_golden("bump-report.md", normalized(report, clean))  # the same report as the CLI's
    doc = json.loads(Path(outputs["json"]).read_text())
    assert doc["pull_request"]["action"] == "opened"
    # A bump that fails (the registry unreachable): `--json` prints the error document, which
    # the step rendered with a KeyError under `bash -eo pipefail`, dying before its outputs.
    output.write_text("")
    summary.write_text("")
    env.update(INPUT_IMAGE="127.0.0.1:1/org/img", INPUT_OPEN_PR="false")
    failed = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=clean.root,
                            env=env, capture_output=True)
    assert failed.returncode == 75 and b"Traceback" not in failed.stderr, failed.stderr.decode()
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert outputs["exit-code"] == "75"
    assert summary.read_text().startswith("## Bump failed (exit 75)\n\n")
    assert "cannot connect to 127.0.0.1:1" in summary.read_text()


@pytest.mark.parametrize("manifests", [["sha256:" + "0" * 64], 7, [{"platform": ["linux"]}]])
def test_a_nightly_whose_image_index_is_malformed_is_skipped_not_a_crash(clean, manifests):
    """The newest nightly's image index lists its manifests as strings, a number, or with a
    platform that is not an object. Before, `bump` ended with an internal error (exit 70) on
    that one image; now it is skipped with the reason, and the next nightly is the target."""
    from helpers.servers import OCI_INDEX

    newest = f"nightly-{clean.c3}"
    clean.registry.tags[(REPO, newest)] = clean.registry._put_manifest(
        OCI_INDEX, {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests})
    code, out, err = clean.bump("--dry-run", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["tag"] == f"nightly-{clean.older}"
    (reason,) = [s["reason"] for s in doc["search"]["skipped"] if s["tag"] == newest]
    assert reason.startswith("its image does not resolve: ") and "image index" in reason, reason


def _manifests_unanswered(scenario: Scenario, commit: str) -> None:
    """The registry answers 503 (come back at once) to every request for the image of the
    nightly of `commit`, as a registry mid-outage does; the tags list still works."""
    scenario.registry.misbehave("status", path=f"/v2/{REPO}/manifests/nightly-{commit}",
                                status=503, headers={"Retry-After": "0"}, times=1000)


def test_a_newer_nightly_the_registry_does_not_answer_for_is_not_up_to_date(clean):
    """The registry lists the newest nightly but answers 503 for its image, every retry.
    `bump` took that as "no image", skipped it, and moved to an older nightly, or (with none
    left) said the stack was on the newest nightly already, exit 0: a scheduled bump stayed
    green while a nightly waited. No answer is not an answer: exit 75 (run again later, not
    bad input), naming the nightly, and nothing is written."""
    _manifests_unanswered(clean, clean.c3)
    before = snapshot(clean.root)
    code, out, err = clean.bump("--json")
    assert code == 75, (out, err)
    assert f"the nightly nightly-{clean.c3}, newer than upstream.lock, could not be looked up" \
        in err and "503" in err, err
    assert "run bump again when the registry answers" in err
    assert snapshot(clean.root) == before


def test_bump_to_a_nightly_whose_image_is_not_looked_up_moves_nothing(clean):
    """`bump --to nightly-X` with the registry failing on X's image: the move went ahead and
    pinned the image by its tag alone, exit 0, although the contract is that it pins the
    image by digest (the Dockerfile then said the lock pins no image). Now nothing is moved,
    exit 75 (the registry gave no answer), and the hint names the move without an image (the commit as SPEC), which works."""
    _manifests_unanswered(clean, clean.c3)
    before = snapshot(clean.root)
    code, out, err = clean.bump("--to", f"nightly-{clean.c3}")
    assert code == 75, (out, err)
    assert f"the image {clean.image_repo}:nightly-{clean.c3} could not be looked up" in err
    way = f"patchforge bump vllm --to {clean.c3}"  # without the image: the commit as SPEC
    assert f"`{way}` (no image is pinned then)" in err, err
    assert snapshot(clean.root) == before
    code, out, err = clean.bump(*way.split()[3:], "--dry-run")
    assert code in (0, 1), err  # the way named moves (1: a Drop-When that holds)


def test_an_image_pinned_offline_by_its_tag_is_said_so_and_verified_by_its_tag(clean):
    """`--offline bump --to nightly-X` pins the image by its tag alone (nothing to look the
    digest up with). The Dockerfile said "upstream.lock pins no image" and `verify --image`
    refused with "no image to verify against ... pin one", while the lock had one. The
    Dockerfile now names the pinned reference and asks for the digest, never building FROM
    the tag, and `verify --image` reads the image the tag names."""
    code, out, err = clean.bump("--dry-run")  # online: the history comes into the store
    assert code == 0, err
    code, out, err = cli_in_process(clean.root, "--offline", "bump", "--image",
                                    clean.image_repo, "--to", f"nightly-{clean.c3}")
    assert code in (0, 1), err
    lock = json.loads((clean.root / "upstream.lock").read_text())
    reference = f"{clean.image_repo}:nightly-{clean.c3}"
    assert lock["image"] == {"reference": reference, "tag": f"nightly-{clean.c3}"}
    dockerfile = (clean.root / "overlays" / "Dockerfile").read_text()
    assert f"upstream.lock pins the image {reference} by its tag alone" in dockerfile
    assert "pins no image" not in dockerfile
    assert "\nFROM ${BASE_IMAGE}\n" in dockerfile and f"FROM {clean.image_repo}" not in dockerfile
    code, out, err = cli_in_process(clean.root, "verify", "--image")
    assert code == 0, (out, err)
    assert clean.images[clean.c3]["digest"] in out, out  # what the tag names, read
    # Online, the command the Dockerfile names pins the digest.
    assert f"#   patchforge rebase --to UPSTREAM={reference}" in dockerfile
    code, out, err = cli_in_process(clean.root, "rebase", "--to", f"vllm={reference}")
    assert code == 0, err
    lock = json.loads((clean.root / "upstream.lock").read_text())
    assert lock["image"]["digest"] == clean.images[clean.c3]["digest"], lock["image"]


def test_a_bump_stopped_on_a_conflict_says_how_to_propose_it_once_resolved(
        tmp_path, registry_server, forge_server):
    """`bump --open-pr` stopped on a conflict printed `pull request: not opened None`, and
    after the person finished the rebase `bump --open-pr` said "on the newest nightly already:
    nothing to move": the resolved move was never proposed and nothing said how. The stop's
    report names the command, and that command opens the pull request of the move as the
    person finished it: until then its body said "nothing to move", `from` the new pin, and
    named none of the fixes the move dropped as landed or the person set aside, while the
    pull request's diff moved the lock and deleted them. It is the report of the move now."""
    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    tag = f"nightly-{scenario.c3}"
    code, dry, err = scenario.bump("--dry-run", "--json")
    landed = [f["name"] for f in json.loads(dry)["fixes"] if f["outcome"] == "dropped"]
    assert landed, dry
    code, out, err = scenario.bump("--open-pr")
    assert code == 1, err
    pinned = json.loads((scenario.root / ".patchforge/bump/report.json").read_text())["from"]
    assert "pull request: not opened (the rebase stopped)" in err and "None" not in err
    command = f"patchforge bump vllm --to {tag} --open-pr"
    assert f"`{command}` then proposes the move" in out
    code, _, err = cli_in_process(scenario.root, "rebase", "--skip")
    assert code == 1, err  # the fix set aside is in none of the overlays
    code, out, err = scenario.bump(*command.split()[3:], "--json")
    assert code in (0, 1), err  # 1: a fix whose Drop-When holds is still in the series
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "moved" and doc["target"]["tag"] == tag
    assert doc["from"] == pinned and doc["from"]["commit"] != doc["target"]["commit"]
    outcomes = {f["name"]: f["outcome"] for f in doc["fixes"]}
    assert {n: outcomes.get(n) for n in landed} == {n: "dropped" for n in landed}, outcomes
    assert outcomes.get("block-size.patch") == "skipped", outcomes
    assert "vllm:" in doc["rebase"]["range_diff"]
    assert doc["pull_request"]["action"] == "opened"
    (sent,) = [json.loads(r.body) for r in forge_server.requests if r.method == "POST"
               and r.body and b'"body"' in r.body]
    assert "nothing to move" not in sent["body"]
    for name in [*landed, "block-size.patch"]:
        assert f"`{name}`" in sent["body"], sent["body"]
    assert "1 set aside" in sent["title"] and f"{len(landed)} landed" in sent["title"], sent
    # Proposed once: the next run finds the stack on the tag, and says so.
    code, out, err = scenario.bump(*command.split()[3:6], "--json")
    assert code in (0, 1), err
    assert json.loads(out)["outcome"] == "up-to-date"


def test_a_move_finished_by_hand_is_the_move_after_a_dry_run_or_a_look_without_open_pr(
        tmp_path, registry_server, forge_server):
    """The move a person finished was proposed as the move only when the first bump after it
    had --open-pr: a `--dry-run` said "nothing to move", and a look without --open-pr kept the
    move's report over the stopped one, after which the command the stop named opened a pull
    request saying "nothing to move" with none of the fixes it dropped. Both describe the
    move now, and the pull request is the move's."""
    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    tag = f"nightly-{scenario.c3}"
    code, _, err = scenario.bump("--open-pr")
    assert code == 1, err
    code, _, err = cli_in_process(scenario.root, "rebase", "--skip")
    assert code == 1, err  # the fix set aside is in none of the overlays
    code, out, err = scenario.bump("--to", tag, "--dry-run", "--json")
    assert code in (0, 1), err
    doc = json.loads(out)
    assert doc["outcome"] == "moved" and doc["dry_run"], doc["outcome"]
    from patchforge.ops.bump_report import verdict
    assert verdict(doc) == "Dry run: the stack was moved already, the rebase finished by hand." \
        or doc["needs_person"]
    code, out, err = scenario.bump("--to", tag, "--json")  # a look first, without --open-pr
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err
    code, out, err = scenario.bump("--to", tag, "--open-pr", "--json")  # as the stop said
    assert code in (0, 1), err
    assert json.loads(out)["outcome"] == "moved"
    (sent,) = [json.loads(r.body) for r in forge_server.requests if r.method == "POST"
               and r.body and b'"body"' in r.body]
    assert "nothing to move" not in sent["body"] and "`block-size.patch`" in sent["body"], \
        sent["body"][:400]


@pytest.mark.parametrize("mode,where", [("interrupt", "in the rebase"), ("kill", "in the rebase"),
                                        ("interrupt", "after the move")])
def test_a_bump_cut_short_in_its_rebase_is_proposed_as_the_move_once_continued(
        tmp_path, registry_server, forge_server, mode, where):
    """`bump --open-pr` cut short inside its rebase (Ctrl-C; a kill: a CI job cancelled), the
    rebase finished as the run said (`rebase --continue`), then `bump --open-pr` again: it said
    "up-to-date", exit 0, and opened no pull request, while the move (two fixes dropped as
    landed, the lock moved) sat in the checkout, never proposed; so did one cut after the move
    was written, before its report. The report of the cut move is kept before the rebase
    starts; the next bump finds the move finished and proposes it."""
    import shutil

    from helpers.cli import run_faulted_copy

    scenario = Scenario(tmp_path / "s", registry_server, forge_server, conflict=False)
    scenario.bump("--dry-run")  # the store filled: the cut falls in the rebase's writes
    pristine = tmp_path / "pristine"
    shutil.copytree(scenario.root, pristine, symlinks=True)
    bump = ("bump", "--image", scenario.image_repo, "--open-pr")
    pin = (pristine / "upstream.lock").read_bytes()
    for nth in range(1, 120):  # the first write whose cut leaves what `where` says
        root = tmp_path / f"cut{nth}"
        cut = run_faulted_copy(pristine, root, *bump, fault=f"write:{nth}",
                               mode="interrupt" if mode == "interrupt" else None)
        in_progress = (root / ".patchforge/rebase/journal.json").exists()
        moved = (root / "upstream.lock").read_bytes() != pin
        if cut.returncode == 0:
            pytest.fail(f"no cut left {where}")
        if in_progress and where == "in the rebase" or \
                moved and not in_progress and where == "after the move":
            break
        if mode == "interrupt" and not moved and not in_progress:
            # Before its rebase began: the kept report is put back.
            kept = [(tree / ".patchforge/bump/report.json").read_bytes()
                    if (tree / ".patchforge/bump/report.json").exists() else None
                    for tree in (root, pristine)]
            assert kept[0] == kept[1], (nth, cut.stderr)
        shutil.rmtree(root)
    else:
        pytest.fail(f"no cut left {where}")
    assert cut.returncode == {"interrupt": 130, "kill": 137}[mode], cut.stderr
    if where == "in the rebase":
        code, out, err = cli_in_process(root, "rebase", "--continue")
        assert code == 0, err
    code, out, err = cli_in_process(root, *bump, "--json")
    doc = json.loads(out)
    assert doc["outcome"] == "moved" and doc["pull_request"]["action"] == "opened", out + err
    (sent,) = [json.loads(r.body) for r in forge_server.requests if r.method == "POST"
               and r.body and b'"body"' in r.body]
    assert "nothing to move" not in sent["body"] and "`compress.patch`" in sent["body"], \
        sent["body"][:400]
    assert "2 landed" in sent["title"], sent["title"]
    code, out, err = cli_in_process(root, *bump[:3], "--json")  # proposed once
    assert json.loads(out)["outcome"] == "up-to-date", out + err


def test_a_bump_whose_commit_would_carry_changes_not_committed_is_refused(clean):
    """`bump --to nightly-OLDER` run as a look (no --open-pr), then `bump --open-pr`: the pull
    request's title and body told of the second move alone, from nightly-OLDER, every fix
    "clean", while its commit (the series, lock and overlays on HEAD) also moved the lock from
    the branch's pin and dropped the fixes the first move dropped as landed: the reviewer was
    never told of them. Refused now before anything moves (exit 2), naming the changes and
    the command that proposes the earlier move; committed, the bump goes on."""
    labels = {"vllm.commit": clean.c2, "org.opencontainers.image.version": "0.0.dev"}
    files = {p: clean.upstream.read(p, clean.c2) for p in (ATTN, OTHER)}
    clean.registry.push_image(REPO, f"nightly-{clean.c2}", labels,
                              created="2026-09-11T05:00:00Z", layers=(layer(files),))
    code, out, err = clean.bump("--to", f"nightly-{clean.c2}", "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err
    before = snapshot(clean.root)
    code, out, err = clean.bump("--open-pr")
    assert code == 2, out + err
    assert "the stack has changes not committed on the branch (" in err and \
        "upstream.lock" in err and "nothing was moved" in err, err
    assert f"`patchforge bump vllm --to nightly-{clean.c2} --open-pr` proposes it" in err, err
    assert snapshot(clean.root) == before
    assert not [r for r in clean.forge.requests if r.method == "POST"]
    git(clean.root, "add", "-A")
    git(clean.root, "commit", "-q", "-m", "The earlier move")
    code, out, err = clean.bump("--open-pr", "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err
    assert json.loads(out)["pull_request"]["action"] == "opened"


def test_a_bump_refused_for_a_patch_file_git_does_not_track_says_how_to_set_it_aside(clean):
    """A fix drafted by hand under series/, not yet `git add`ed: `bump --open-pr` is refused
    (its commit would carry the file). The hint said `git stash`, which leaves a file git does
    not track alone ("No local changes to save"): the bump was refused again, the same words.
    The hint's command, run as written, sets the file aside and the bump goes on."""
    import re
    import shlex

    draft = clean.root / "series" / "vllm" / "draft-fix.patch"
    draft.write_bytes(b"Description: a draft\n")
    code, out, err = clean.bump("--open-pr")
    assert code == 2 and "series/vllm/draft-fix.patch" in err, out + err
    (command,) = [c for c in re.findall(r"`([^`]*)`", err) if c.startswith("git stash")]
    git(clean.root, *shlex.split(command)[1:])
    assert not draft.exists()
    code, out, err = clean.bump("--open-pr", "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err


@pytest.mark.parametrize("checkout", ["not a repository", "detached HEAD", "no remote"])
def test_a_bump_whose_pull_request_cannot_be_made_here_is_refused_before_it_moves(clean,
                                                                                checkout):
    """`bump --open-pr` in a checkout it cannot commit or push from (no git repository, a
    detached HEAD: a CI checkout of a tag or of a pull request's merge commit, no remote
    `origin`) moved and wrote the stack, then failed (exit 2) with a hint that the forge
    would open its pull request once it answered. Refused now before anything moves, naming
    what is missing; and so is its dry run."""
    import shutil

    if checkout == "not a repository":
        shutil.rmtree(clean.root / ".git")
    elif checkout == "detached HEAD":
        git(clean.root, "checkout", "-q", "--detach")
    else:
        git(clean.root, "remote", "remove", "origin")
    before = snapshot(clean.root)
    code, out, err = clean.bump("--open-pr")
    assert code == 2 and "nothing was moved" in err, out + err
    assert {"not a repository": "is in none", "detached HEAD": "HEAD is detached",
            "no remote": "has no remote 'origin'"}[checkout] in err, err
    assert "forge answers" not in err and snapshot(clean.root) == before
    # Its dry run (actions/bump's `dry-run: "true"`, with open-pr at its default) failed after
    # the look without the remote, saying "the stack moved to ... and the report is kept" of
    # a stack that had not moved and a report never written: it says what the run will meet.
    code, out, err = clean.bump("--dry-run", "--open-pr")
    assert code == 2 and "nothing was moved" in err and "stack moved" not in err, out + err
    assert snapshot(clean.root) == before


def test_a_clean_move_run_again_for_its_tag_is_up_to_date_and_proposed_as_the_move(clean):
    """A clean `bump --to TAG` run again for the same tag said "moved" again, from the old
    pin, each time until a pull request was opened (the move's kept report taken for one
    finished by hand). It is up to date; with --open-pr, the pull request is the move's."""
    tag = f"nightly-{clean.c3}"
    code, out, err = clean.bump("--to", tag, "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err
    snap = {p: (clean.root / ".patchforge/bump" / p).read_bytes()
            for p in ("report.json", "report.md")}
    code, out, err = clean.bump("--to", tag, "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "up-to-date", out + err
    for name, data in snap.items():  # as the look left them: then proposed
        (clean.root / ".patchforge/bump" / name).write_bytes(data)
    code, out, err = clean.bump("--to", tag, "--open-pr", "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err
    (sent,) = [json.loads(r.body) for r in clean.forge.requests if r.method == "POST"
               and r.body and b'"body"' in r.body]
    assert "nothing to move" not in sent["body"], sent["body"][:400]
    code, out, err = clean.bump("--to", tag, "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "up-to-date", out + err


@pytest.mark.parametrize("kind,status", [("status", 401), ("status", 403), ("corrupt", 200),
                                         ("bad_json", 200), ("status", 404)])
def test_only_the_registrys_answer_about_the_image_passes_a_newer_nightly_over(clean, kind,
                                                                               status):
    """The registry refuses the newest nightly's manifest (401 without a challenge, 403: a
    token expired or not given to the job) or serves it with bytes that are not its digest.
    `bump` passed that nightly over as if it had no image: "on the newest nightly already"
    or an older target, exit 0, every night. Only a 404 of the manifest (the registry says
    there is no such image) passes it over now; the rest stops the bump, exit 2, naming the
    nightly and what to check, with nothing written. So does a manifest that does not parse
    when no digest vouched for its bytes."""
    path = f"/v2/{REPO}/manifests/nightly-{clean.c3}"
    clean.registry.misbehave(kind, path=path, status=status, times=1000)
    before = snapshot(clean.root)
    code, out, err = clean.bump("--dry-run", "--json")
    if status == 404:
        assert code == 0, err
        doc = json.loads(out)
        assert doc["target"]["tag"] == f"nightly-{clean.older}"
        (reason,) = [s["reason"] for s in doc["search"]["skipped"]
                     if s["tag"] == f"nightly-{clean.c3}"]
        assert "404" in reason, reason
        return
    assert code == 2, (out, err)
    assert f"the nightly nightly-{clean.c3}, newer than upstream.lock, could not be looked up" \
        in err, err
    # bad_json: an answer no digest checks (no Docker-Content-Digest) that does not parse may
    # be a proxy's as well as the pushed manifest: the registry's fault, not the image's.
    assert {"status": "docker login", "corrupt": "digest",
            "bad_json": "did not serve the image"}[kind] in err, err
    assert snapshot(clean.root) == before


def test_a_landing_the_new_nightly_takes_back_needs_a_person(clean):
    """The first bump drops compress.patch (landed upstream as #11) into upstreamed/; upstream
    then reverts #11, and a newer nightly is made of the revert. bump moved onto it with exit
    0, outcome "moved", needs_person false and no word of the fix, in the report or the pull
    request, though the nightly runs without it and `status` exits 1 right after. Now it
    exits 1, needs a person, and the report, its JSON and the pull request's body name the
    fix, the revert and `bring-back`."""
    code, _, err = clean.bump("--open-pr")
    assert code == 0, err
    assert (clean.root / "series/vllm/upstreamed/compress.patch").is_file()
    # (scale.patch's Drop-When holds at the newer nightly, which needs a person by itself.)
    assert cli_in_process(clean.root, "delete", "scale")[0] == 0
    # The pull request merged (and the deletion committed): the next bump's is its move alone.
    git(clean.root, "add", "-A")
    git(clean.root, "commit", "-q", "-m", "Bump merged; scale deleted")
    up = clean.upstream
    os.environ["GIT_COMMITTER_DATE"] = os.environ["GIT_AUTHOR_DATE"] = "2026-09-10T13:00:00Z"
    git(up.path, "revert", "--no-edit", clean.c2)
    revert = up.head()
    files = {p: up.read(p, revert) for p in (ATTN, OTHER)}
    clean.registry.push_image(REPO, f"nightly-{revert}",
                              {"vllm.commit": revert, "org.opencontainers.image.version": "0.0.dev"},
                              created="2026-09-14T05:00:00Z", layers=(layer(files),))
    code, out, err = clean.bump("--to", f"nightly-{revert}", "--open-pr", "--json")
    assert code == 1, out + err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "moved" and doc["needs_person"] is True, doc
    said = f"reverted upstream (needs attention): fix vllm/compress.patch landed in " \
        f"{clean.c2[:12]} was reverted upstream in {revert[:12]}"
    assert [n for n in doc["notes"] if said in n and "bring-back vllm/compress.patch" in n], \
        doc["notes"]
    report = (clean.root / ".patchforge/bump/report.md").read_text()
    assert said in report and "bring-back vllm/compress.patch" in report, report
    sent = [json.loads(r.body) for r in clean.forge.requests if r.method in ("POST", "PATCH")
            and r.body and b'"body"' in r.body][-1]
    assert said in sent["body"], sent["body"]
    code, _, _ = cli_in_process(clean.root, "status")
    assert code == 1


def test_a_fix_an_earlier_rebase_set_aside_is_named_by_the_next_bump_and_needs_a_person(
        tmp_path, registry_server, forge_server):
    """A bump stops on block-size.patch and the person sets it aside (`rebase --skip`): it is
    under skipped/, in no overlay. The next bump, to a newer nightly, and its dry run said
    nothing of it, exit 0, "The stack would move cleanly": the pull request and the deploy
    after it went out without the fix while `verify` and `status` exit 1 for it. Both now name
    it and `bring-back`, and need a person (exit 1), as `verify` and `rebase --to` do."""
    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    code, _, err = scenario.bump()
    assert code == 1, err
    code, _, err = cli_in_process(scenario.root, "rebase", "--skip")
    assert code == 1, err  # the fix set aside is in none of the overlays
    assert (scenario.root / "series/vllm/skipped/block-size.patch").is_file()
    # Drop-When holds for these two at the newer nightly (a person is needed by itself).
    for name in ("running-offset", "scale"):
        assert cli_in_process(scenario.root, "delete", name)[0] == 0
    up = scenario.upstream
    scenario.registry.push_image(
        REPO, f"nightly-{scenario.m9}",
        {"vllm.commit": scenario.m9, "org.opencontainers.image.version": "0.0.dev"},
        created="2026-09-14T05:00:00Z",
        layers=(layer({p: up.read(p, scenario.m9) for p in (ATTN, OTHER)}),))
    said = "vllm/block-size.patch was set aside by a rebase (series/vllm/skipped/" \
        "block-size.patch); `patchforge bring-back block-size` puts it back"
    for dry in (("--dry-run",), ()):
        code, out, err = scenario.bump(*dry, "--json")
        assert code == 1, out + err
        doc = json.loads(out)
        assert validation_errors(doc, "bump") == []
        assert doc["target"]["commit"] == scenario.m9 and doc["needs_person"] is True, doc
        assert doc["outcome"] == ("planned" if dry else "moved"), doc["outcome"]
        assert [n for n in doc["notes"] if said in n], doc["notes"]
        from patchforge.ops.bump_report import render_markdown
        assert said in _shown(render_markdown(doc))
    assert said in _shown((scenario.root / ".patchforge/bump/report.md").read_text())
    assert (scenario.root / "series/vllm/skipped/block-size.patch").is_file()
    # Up to date: still named, still a person's to do.
    code, out, err = scenario.bump()
    assert code == 1 and said in _shown(out) and "nothing to move" in out, out + err


def test_a_real_bump_stopped_on_a_fix_marks_that_fix_as_the_dry_run_does(
        tmp_path, registry_server, forge_server):
    """A real bump whose rebase stopped reported the fix it stopped on as `judged`, no ⚠, no
    evidence, and its title without "(1 in conflict)", where the dry run of the same bump
    said "conflict: a person is needed ⚠": the pull request's reader was not told which fix
    waits. Both now name it, with what stopped it."""
    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    from patchforge.ops.bump_report import render_markdown, title
    code, out, err = scenario.bump("--dry-run", "--json")
    assert code == 1, err
    planned = {f["name"]: f for f in json.loads(out)["fixes"]}["block-size.patch"]
    code, out, err = scenario.bump("--json")
    assert code == 1, err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "stopped"
    stopped = {f["name"]: f for f in doc["fixes"]}["block-size.patch"]
    assert (stopped["outcome"], stopped["summary"], stopped["needs_person"]) == \
        (planned["outcome"], planned["summary"], True) == \
        ("conflict", "conflict: a person is needed", True)
    assert stopped["evidence"], stopped
    assert "1 in conflict)" in title(doc), title(doc)
    row = next(line for line in render_markdown(doc).splitlines()
               if line.startswith("| `block-size.patch` |"))
    assert "conflict: a person is needed ⚠" in row and not row.endswith("| - |"), row


def test_an_echoed_authorization_header_never_reaches_the_output(tmp_path, registry_server,
                                                                  forge_server, monkeypatch):
    """A token realm that quotes the Authorization it refused in its 401 answer ("bad
    credentials: Basic <base64 of ci:secret>", as debug endpoints and proxies do) had the
    registry secret printed on stderr and in --json: only the client's own token was scrubbed
    from answers, not a credential passed in the request's header. Every form of it is
    scrubbed now (the header's credential, Basic's decoded pair and its secret)."""
    import base64

    from helpers.servers import Answer

    secret = "s3cr3t-registry-password-0123456789"
    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    monkeypatch.setenv("PATCHFORGE_REGISTRY_TOKEN", secret)
    monkeypatch.setenv("PATCHFORGE_REGISTRY_USER", "ci")
    monkeypatch.setenv("PATCHFORGE_REGISTRY_HOST", registry_server.host)
    registry_server.auth_required = True

    def echo(method, path, query, req):
        got = req.header("authorization") or ""
        pair = base64.b64decode(got.split()[-1]).decode(errors="replace") if got else ""
        message = f"bad credentials: {got}, decoded: {pair}"
        return Answer(401, json.dumps({"errors": [{"code": "UNAUTHORIZED",
                                                   "message": message}]}).encode(),
                      {"Content-Type": "application/json"})
    registry_server.token_server.route = echo
    code, out, err = s.bump("--dry-run", "--json")
    encoded = base64.b64encode(f"ci:{secret}".encode()).decode()
    assert any(r.header("authorization") == f"Basic {encoded}"
               for r in registry_server.token_server.requests), "credentials never sent"
    assert code == 2, (code, err)
    assert encoded not in err + out and secret not in err + out, err
    assert "bad credentials: Basic ***" in err, err


def as_person(repo: Path, *args: str) -> None:
    """git run as another person P: their identity in the environment, where the tests' own
    identity (helpers.env) would win over a `-c user.name`."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "P", "GIT_AUTHOR_EMAIL": "p@example.com",
           "GIT_COMMITTER_NAME": "P", "GIT_COMMITTER_EMAIL": "p@example.com"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_the_bump_commit_is_made_by_the_configured_identity_dated_now(tmp_path, registry_server,
                                                                     forge_server, monkeypatch):
    """`bump --open-pr` committed as "patchforge <patchforge@localhost>" dated 1970-01-01
    whatever identity the job gave git (actions/bump/action.yml sets one for that commit): the
    store's fixed identity reached the user's commit. The commit is the configured identity's,
    dated now."""
    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.delenv(key, raising=False)
    git(s.root, "config", "user.name", "CI Bot")
    git(s.root, "config", "user.email", "ci@example.com")
    code, _, err = s.bump("--open-pr")
    assert code == 0, err
    made = git(s.root, "--git-dir", str(s.remote), "log", "-1", "--format=%an <%ae> %at|%cn <%ce> %ct",
               f"patchforge/bump-nightly-{s.c3}").strip()
    (author, authored), (committer, committed) = (side.rsplit(" ", 1) for side in made.split("|"))
    assert author == committer == "CI Bot <ci@example.com>", made
    assert int(authored) > 1_700_000_000 and int(committed) > 1_700_000_000, made


def test_a_bump_without_a_git_identity_to_commit_it_is_refused_before_it_moves(
        tmp_path, registry_server, forge_server, monkeypatch):
    """On a job or machine where git has no identity (no user.name/user.email, no
    GIT_AUTHOR_*), `bump --open-pr` moved and wrote the stack, then failed at the commit
    ("Please tell me who you are"), exit 2, with a hint to wait for the forge. It is refused
    before anything moves, naming the git config that gives one; with one, it commits."""
    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)
    before = snapshot(s.root)
    code, _, err = s.bump("--open-pr")
    assert code == 2 and "git has no identity to make it with here" in err, err
    assert "git config user.email" in err and "once the forge answers" not in err, err
    assert snapshot(s.root) == before and not forge_server.requests
    git(s.root, "config", "user.name", "CI Bot")
    git(s.root, "config", "user.email", "ci@example.com")
    code, _, err = s.bump("--open-pr")
    assert code == 0, err


def test_a_second_bump_keeps_the_commits_people_pushed_to_its_branch(tmp_path, registry_server,
                                                                    forge_server):
    """The next night's `bump --open-pr` for the same nightly (nothing newer, its pull request
    not merged yet) force-pushed over a fix-up a person had pushed onto patchforge/bump-<tag>,
    exit 0: their commit was gone from the branch. Refused now (exit 2, naming the branch,
    nothing pushed); the branch keeps their commit. A branch holding only patchforge's own
    commit is still updated."""
    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    night1 = tmp_path / "night1"
    git(tmp_path, "clone", "-q", str(s.remote), str(night1))
    code, _, err = cli_in_process(night1, "bump", "--image", s.image_repo, "--open-pr")
    assert code == 0, err
    branch = f"patchforge/bump-nightly-{s.c3}"
    # Night 2, nothing pushed by anyone: the branch is patchforge's, updated, from a full
    # checkout and from a shallow one, the stack's main having moved on meanwhile (the bump's
    # base is then not in a shallow checkout).
    other = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(s.remote), str(other))
    (other / "NOTES.md").write_text("main moves on\n")
    git(other, "add", "NOTES.md")
    git(other, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m",
        "notes")
    git(other, "push", "-q", "origin", "HEAD")
    for again, depth in (("again", []), ("again-shallow", ["--depth", "1"])):
        clone = tmp_path / again
        git(tmp_path, "clone", "-q", *depth, f"file://{s.remote}", str(clone))
        code, _, err = cli_in_process(clone, "bump", "--image", s.image_repo, "--open-pr")
        assert code == 0, err
    person = tmp_path / "person"
    git(tmp_path, "clone", "-q", "-b", branch, str(s.remote), str(person))
    # The bump's own commit amended by a person (its committer theirs): not pushed over.
    as_person(person, "commit", "-q", "--amend", "--no-edit", "--allow-empty")
    git(person, "push", "-q", "--force", "origin", branch)
    amended = tmp_path / "amended"
    git(tmp_path, "clone", "-q", f"file://{s.remote}", str(amended))
    code, _, err = cli_in_process(amended, "bump", "--image", s.image_repo, "--open-pr")
    assert code == 2 and "holds commits patchforge did not make" in err, err
    (person / "NOTES.md").write_text("the fix-up the checks asked for\n")
    git(person, "add", "NOTES.md")
    as_person(person, "commit", "-q", "-m", "fix-up")
    git(person, "push", "-q", "origin", branch)
    theirs = git(person, "rev-parse", "HEAD").strip()
    for night, depth in (("night2", []), ("night3", ["--depth", "1"])):
        # (night3: a shallow checkout, actions/checkout's default)
        clone = tmp_path / night
        git(tmp_path, "clone", "-q", *depth, f"file://{s.remote}", str(clone))
        code, _, err = cli_in_process(clone, "bump", "--image", s.image_repo, "--open-pr")
        assert code == 2 and f"{branch} on origin holds commits patchforge did not make" \
            in err, err
        assert git(s.remote, "rev-parse", f"refs/heads/{branch}").strip() == theirs


def test_a_404_from_another_host_a_redirect_led_to_is_no_answer_about_the_image(
        tmp_path, registry_server, forge_server, other_server):
    """The newest nightly's manifest request redirected to another host (a blob store, a
    mirror) that answered 404 was taken for the registry saying the image does not exist:
    that nightly was skipped and an older one planned, exit 0. It is the registry failing,
    exit 2, as for a server error."""
    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    registry_server.misbehave("redirect", path=f"/v2/{REPO}/manifests/nightly-{s.c3}",
                              location=other_server.url + "/elsewhere")
    code, out, err = s.bump("--dry-run", "--json")
    assert code == 2, (code, out[-400:])
    assert "answered 404" in err and f"nightly-{s.c3}" in err, err


def test_a_registry_secret_with_a_trailing_newline_is_taken_without_it(
        tmp_path, registry_server, forge_server, monkeypatch):
    """PATCHFORGE_REGISTRY_TOKEN read from a CRLF secrets file (or `$(cat file)` keeping its
    newline) was sent with it: the realm refused the login (401) and the hint said to set the
    variable that was set. Stripped, as the forge token is."""
    import base64

    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    registry_server.auth_required = True
    registry_server.token_server.credentials = "Basic " + base64.b64encode(b"ci:sekret").decode()
    monkeypatch.setenv("PATCHFORGE_REGISTRY_TOKEN", "sekret\r\n")
    monkeypatch.setenv("PATCHFORGE_REGISTRY_USER", "ci")
    monkeypatch.setenv("PATCHFORGE_REGISTRY_HOST", registry_server.host)
    code, _, err = s.bump("--dry-run", "--json")
    assert code == 0, err


def test_a_registry_rate_limit_is_advised_a_login_not_a_github_token(tmp_path, registry_server,
                                                                      forge_server):
    """A registry's 429 with a long Retry-After (Docker Hub's anonymous limit) ended bump with
    exit 2 and the hint "a GITHUB_TOKEN raises GitHub's rate limit", which does nothing for a
    registry. The hint names what does: logging in; exit 75, as for a registry that does not
    answer (running it later may do)."""
    s = Scenario(tmp_path, registry_server, forge_server, conflict=False)
    registry_server.misbehave("status", path=f"/v2/{REPO}/tags/list", status=429,
                              headers={"Retry-After": "3600"}, times=100)
    code, _, err = s.bump("--dry-run")
    assert code == 75 and "429" in err, err
    assert "GITHUB_TOKEN" not in err and "docker login" in err, err


@pytest.mark.parametrize("ignored", ["overlays/", "series/"])
def test_a_bump_in_a_stack_that_has_git_ignore_its_files_opens_or_is_refused_before_it_moves(
        clean, ignored):
    """A stack that makes its overlays at deploy time keeps `overlays/` in .gitignore: `bump
    --open-pr` moved and wrote the stack, then failed at `git add` ("paths are ignored"): the
    move sat in the checkout, never proposed. The overlays git ignores stay out of the commit
    and the pull request opens. A series git ignores could not be in the commit at all: that
    is refused before anything moves, naming the file and the rule's command."""
    with (clean.root / ".gitignore").open("a") as rules:  # below the lines `init` wrote
        rules.write(ignored + "\n")
    git(clean.root, "rm", "-r", "-q", "--cached", ignored.rstrip("/"))
    git(clean.root, "add", ".gitignore")
    git(clean.root, "commit", "-q", "-m", "Keep " + ignored + " out of git")
    if ignored == "series/":
        before = snapshot(clean.root)
        code, out, err = clean.bump("--open-pr")
        assert code == 2 and "git ignores series/" in err and "nothing was moved" in err, \
            out + err
        assert "git check-ignore -v series/" in err, err
        assert snapshot(clean.root) == before and not clean.forge.requests
        return
    code, out, err = clean.bump("--open-pr", "--json")
    assert code == 0, out + err
    assert json.loads(out)["pull_request"]["action"] == "opened"
    branch = f"patchforge/bump-nightly-{clean.c3}"
    files = git(clean.remote, "ls-tree", "-r", "--name-only", branch).split()
    assert "upstream.lock" in files and "series/vllm/upstreamed/compress.patch" in files
    assert not [f for f in files if f.startswith("overlays/")], files
    assert git(clean.remote, "show", f"{branch}:upstream.lock").encode() == \
        (clean.root / "upstream.lock").read_bytes()


def test_a_bump_whose_lock_git_ignores_but_tracks_opens_its_pull_request(clean):
    """A stack whose .gitignore has `*.lock` (a template's rule) and tracks upstream.lock all the
    same: git commits its changes like any tracked file, yet `bump --open-pr` was refused
    before it moved ("git ignores upstream.lock"). The pull request opens, the lock moved."""
    with (clean.root / ".gitignore").open("a") as rules:
        rules.write("*.lock\n")
    git(clean.root, "add", ".gitignore")
    git(clean.root, "commit", "-q", "-m", "Ignore lock files")
    assert "upstream.lock" in git(clean.root, "ls-files").split()
    code, out, err = clean.bump("--open-pr", "--json")
    assert code == 0, out + err
    assert json.loads(out)["pull_request"]["action"] == "opened"
    branch = f"patchforge/bump-nightly-{clean.c3}"
    assert git(clean.remote, "rev-parse", f"{branch}:upstream.lock") == \
        git(clean.root, "hash-object", "upstream.lock")
    assert clean.c3 in (clean.root / "upstream.lock").read_text()


def test_a_stopped_bump_finished_by_hand_then_a_newer_nightly_names_how_to_propose_it(
        tmp_path, registry_server, forge_server):
    """`bump --open-pr` stopped on a conflict, the person finished the rebase, and a newer
    nightly came out before they proposed it: the next `bump --open-pr` was refused for the
    uncommitted move (rightly), but named only "commit them, or set them aside": not the
    `bump --to TAG --open-pr` the stop had named, which proposes the finished move. It names
    it now, and that command, run as written, opens the pull request of the finished move."""
    import re
    import shlex

    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    tag = f"nightly-{scenario.c3}"
    code, _, err = scenario.bump("--open-pr")
    assert code == 1, err
    code, _, err = cli_in_process(scenario.root, "rebase", "--skip")
    assert code == 1, err  # the fix set aside is in none of the overlays
    up = scenario.upstream
    labels = {"vllm.commit": scenario.m9, "org.opencontainers.image.version": "0.0.dev"}
    files = {p: up.read(p, scenario.m9) for p in (ATTN, OTHER)}
    registry_server.push_image(REPO, f"nightly-{scenario.m9}", labels,
                               created="2026-09-14T05:00:00Z", layers=(layer(files),))
    before = snapshot(scenario.root)
    code, out, err = scenario.bump("--open-pr")
    assert code == 2 and "nothing was moved" in err, out + err
    assert snapshot(scenario.root) == before
    (command,) = [c for c in re.findall(r"`([^`]*)`", err) if c.startswith("patchforge bump")]
    assert command == f"patchforge bump vllm --to {tag} --open-pr", err
    code, out, err = scenario.bump(*shlex.split(command)[3:], "--json")
    assert code in (0, 1), err
    doc = json.loads(out)
    assert doc["outcome"] == "moved" and doc["target"]["tag"] == tag, out
    assert doc["pull_request"]["action"] == "opened"
    (sent,) = [json.loads(r.body) for r in forge_server.requests if r.method == "POST"
               and r.body and b'"body"' in r.body]
    assert "`block-size.patch`" in sent["body"], sent["body"][:400]


# --- a wheel upstream: the lock pins the import of a wheel, the nightly names a commit ---------

CALC = "tinypkg/calc.py"
CALC_BASE = b"a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n"
TINY_REPO = "rocm/tiny-dev"


class WheelStack:
    """A stack whose upstream `tiny` is a wheel (tinypkg 1.0 pinned, as the example stack pins
    vllm and amd-aiter), its history at `git-url`, and the nightlies nightly-<c0> (1.0) and
    nightly-<c1> (1.1) whose labels name both the commit and the wheel's version. The one fix
    changes `b`; with `conflict`, 1.1 changes `b` too."""

    def __init__(self, tmp: Path, registry, forge, monkeypatch, *, conflict: bool) -> None:
        self.registry, self.forge = registry, forge
        later = CALC_BASE.replace(b"b = 2\n", b"b = 20\n") if conflict else \
            CALC_BASE + b"g = 7\n"
        self.later = later
        up = self.upstream = Upstream(tmp / "tiny", {CALC: CALC_BASE})
        self.c0, self.c1 = up.base, up.commit({CALC: later}, "Later")
        wheels = tmp / "wheels"
        build_wheel(wheels, "tinypkg", "1.0", {CALC: CALC_BASE})
        build_wheel(wheels, "tinypkg", "1.1", {CALC: later})
        monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
        for commit, version, data in ((self.c0, "1.0", CALC_BASE), (self.c1, "1.1", later)):
            registry.push_image(TINY_REPO, f"nightly-{commit}",
                                {"tiny.commit": commit, "tiny.version": version},
                                layers=(layer({CALC: data}),))
        root = self.root = tmp / "stack"
        ok(None, "init", "--standalone", str(root))
        ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0",
           "--install-root", f"/{INSTALL_ROOT}")
        config = root / "patchforge.toml"
        text = config.read_text().replace("https://api.github.com", forge.url)
        text = text.replace("[forge]\n", '[forge]\nrepo = "team/stack"\n')
        config.write_text(text + f'git-url = "{up.path}"\n')  # the upstream's table is last
        series = root / "series" / "tiny"
        series.mkdir(parents=True)
        (series / "fix-b.patch").write_bytes(patch_file(
            CALC, CALC_BASE, CALC_BASE.replace(b"b = 2\n", b"b = 22\n"), "Fix b"))
        (series / "series").write_text("fix-b.patch\n")
        ok(root, "overlays")
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "The stack")
        remote = root.parent / "stack-remote.git"
        git(root.parent, "init", "-q", "--bare", str(remote))
        git(root, "remote", "add", "origin", str(remote))
        git(root, "push", "-q", "origin", "main")

    @property
    def tag(self) -> str:
        return f"nightly-{self.c1}"

    def bump(self, *args: str) -> tuple[int, str, str]:
        return cli_in_process(self.root, "bump", "--image", f"{self.registry.host}/{TINY_REPO}",
                              *args)

    def sent_bodies(self) -> list[str]:
        return [json.loads(r.body)["body"] for r in self.forge.requests
                if r.method == "POST" and r.body and b'"body"' in r.body]


def test_a_wheel_upstreams_move_stopped_and_continued_is_proposed_as_the_move(
        tmp_path, registry_server, forge_server, monkeypatch):
    """A wheel upstream (the lock pins the import of the wheel, not a commit of the
    upstream's history): `bump --open-pr` stopped on a conflict, the person resolved it and
    ran `rebase --continue`, then the command the stop names. It said "on the newest nightly
    already: nothing to move", exit 0, and opened no pull request (the kept report's nightly
    commit was compared with the lock's wheel import); the move, the lock moved to 1.1, sat
    in the checkout. It is the move now, from 1.0 to 1.1, its pull request opened."""
    stack = WheelStack(tmp_path, registry_server, forge_server, monkeypatch, conflict=True)
    code, out, err = stack.bump("--open-pr")
    assert code == 1, out + err
    command = f"patchforge bump tiny --to {stack.tag} --open-pr"
    assert f"`{command}` then proposes the move" in out, out
    pinned = json.loads((stack.root / "upstream.lock").read_text())["upstreams"]["tiny"]
    work = stack.root / ".patchforge" / "work" / "tiny" / CALC
    assert b"<<<<<<<" in work.read_bytes()
    work.write_bytes(stack.later.replace(b"b = 20\n", b"b = 22\n"))
    code, _, err = cli_in_process(stack.root, "rebase", "--continue")
    assert code == 0, err
    moved = json.loads((stack.root / "upstream.lock").read_text())["upstreams"]["tiny"]
    assert moved["version"] == "1.1"
    code, out, err = stack.bump(*command.split()[3:], "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["outcome"] == "moved", doc["outcome"]
    assert doc["from"] == {"label": "1.0", "commit": pinned["commit"]}
    assert doc["target"]["commit"] == stack.c1 and doc["target"]["tag"] == stack.tag
    assert doc["target"]["pin"] == {"label": "1.1", "commit": moved["commit"]}
    assert {f["name"]: f["outcome"] for f in doc["fixes"]} == {"fix-b.patch": "resolved"}
    assert doc["pull_request"]["action"] == "opened"
    (body,) = stack.sent_bodies()
    assert "nothing to move" not in body and "`fix-b.patch`" in body, body[:600]
    assert f"| to | `1.1` (`{moved['commit'][:12]}`) |" in body, body[:600]
    # Proposed once: on the newest nightly now, with and without the tag.
    for args in (("--to", stack.tag, "--json"), ("--json",)):
        code, out, err = stack.bump(*args)
        assert code == 0 and json.loads(out)["outcome"] == "up-to-date", out + err
    assert len(stack.sent_bodies()) == 1


def test_a_move_finished_by_hand_is_never_said_to_be_clean(
        tmp_path, registry_server, forge_server, monkeypatch):
    """`bump --open-pr` stopped on a conflict, the person resolved it, `rebase --continue`,
    then the command the stop names: the pull request's title counted nothing and its body
    said "The stack moved cleanly." above a table with the fix "resolved by hand", the one
    change the reviewer has to read. The title counts it and the verdict names it now."""
    stack = WheelStack(tmp_path, registry_server, forge_server, monkeypatch, conflict=True)
    assert stack.bump("--open-pr")[0] == 1
    work = stack.root / ".patchforge" / "work" / "tiny" / CALC
    work.write_bytes(stack.later.replace(b"b = 20\n", b"b = 22\n"))
    code, _, err = cli_in_process(stack.root, "rebase", "--continue")
    assert code == 0, err
    code, out, err = stack.bump("--to", stack.tag, "--open-pr")
    assert code == 0, out + err
    (body,) = stack.sent_bodies()
    assert "moved cleanly" not in body, body[:600]
    assert "the rebase was finished by hand: `fix-b.patch` resolved by hand" in body, body[:600]
    (title,) = [json.loads(r.body)["title"] for r in stack.forge.requests
                if r.method == "POST" and r.body and b'"title"' in r.body]
    assert title.endswith("(1 resolved by hand)"), title


def test_a_wheel_upstreams_clean_move_not_proposed_yet_is_proposed_as_the_move(
        tmp_path, registry_server, forge_server, monkeypatch):
    """A wheel upstream, a clean `bump` run as a look (no --open-pr). The next `bump` did not
    say the move's pull request was never opened, and `bump --to TAG --open-pr` opened a pull
    request saying "The stack is on nightly-... already: nothing to move." whose commit moved
    the lock from 1.0 to 1.1. The look's move is proposed as the move now."""
    stack = WheelStack(tmp_path, registry_server, forge_server, monkeypatch, conflict=False)
    code, out, err = stack.bump("--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["outcome"] == "moved" and doc["target"]["commit"] == stack.c1, doc
    code, out, err = stack.bump()
    assert code == 0 and "its pull request was never opened" in err, out + err
    code, out, err = stack.bump("--to", stack.tag, "--open-pr", "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["outcome"] == "moved" and doc["from"]["label"] == "1.0", doc
    assert doc["target"]["pin"]["label"] == "1.1" and validation_errors(doc, "bump") == []
    assert doc["pull_request"]["action"] == "opened"
    (body,) = stack.sent_bodies()
    assert "nothing to move" not in body and "The stack moved cleanly." in body, body[:600]
    code, out, err = stack.bump("--json")
    assert code == 0 and json.loads(out)["outcome"] == "up-to-date", out + err
    assert "never opened" not in err


def test_a_wheel_upstreams_nightly_whose_image_is_not_looked_up_names_a_way_that_moves(
        tmp_path, registry_server, forge_server, monkeypatch):
    """`bump tiny --to nightly-X` for a wheel upstream, the registry failing on X's image:
    the hint named `patchforge bump tiny --to <X's commit>` as the move without the image,
    which a wheel upstream refuses ("name a version of tinypkg"). It names the wheel's
    version now, and that command, run with it, moves the stack."""
    stack = WheelStack(tmp_path, registry_server, forge_server, monkeypatch, conflict=False)
    registry_server.misbehave("status", path=f"/v2/{TINY_REPO}/manifests/{stack.tag}",
                              status=503, headers={"Retry-After": "0"}, times=1000)
    before = snapshot(stack.root)
    code, out, err = stack.bump("--to", stack.tag)
    assert code == 75 and "could not be looked up" in err, out + err
    way = "patchforge bump tiny --to VERSION"
    assert f"`{way}`, VERSION the version of tinypkg the nightly holds (no image is pinned " \
        "then)" in err, err
    assert stack.c1 not in err.split("hint: ", 1)[1], err
    assert snapshot(stack.root) == before
    code, out, err = stack.bump(*way.replace("VERSION", "1.1").split()[3:], "--json")
    assert code == 0, out + err
    doc = json.loads(out)
    assert doc["outcome"] == "moved" and doc["target"]["pin"]["label"] == "1.1", doc


def test_a_wheel_pinned_by_its_version_is_not_said_to_be_older_than_every_nightly(
        tmp_path, registry_server, forge_server, monkeypatch):
    """A wheel upstream pinned by its version (tinypkg 1.0, no nightly image pinned): its pin
    is no commit of the history nightlies are ordered by. The report said "2 newer than the
    stack (ordered by the upstream's history), 0 not newer" while nightly-<c0> holds the very
    wheel pinned. It says the stack's place in that history is unknown and each nightly a
    candidate (`place_known` false); once a nightly's image is pinned, it is known again."""
    stack = WheelStack(tmp_path, registry_server, forge_server, monkeypatch, conflict=False)
    code, out, err = stack.bump("--dry-run")
    assert code == 0, out + err
    assert "newer than the stack" not in out, out
    assert "2 on the upstream's history (ordered by it), each a candidate: the stack's place " \
        "in that history is unknown" in out, out
    code, out, err = stack.bump("--dry-run", "--json")
    doc = json.loads(out)
    assert validation_errors(doc, "bump") == []
    assert doc["search"]["place_known"] is False and doc["target"]["tag"] == stack.tag
    code, out, err = stack.bump("--json")
    assert code == 0 and json.loads(out)["outcome"] == "moved", out + err
    code, out, err = stack.bump("--json")
    doc = json.loads(out)
    assert doc["outcome"] == "up-to-date" and doc["search"]["place_known"] is True, doc
    assert doc["search"]["not_newer"] == 2 and doc["search"]["newer"] == []



def test_a_bump_where_git_ignores_patch_files_never_leaves_a_landed_fix_out(clean, tmp_path):
    """A person's global git ignore holds `*.patch` (a common line: patches are build litter
    elsewhere). The stack's patches are tracked all the same, but the files the bump makes
    are not: `bump --open-pr` committed the move without series/vllm/upstreamed/*.patch, so
    the pull request dropped the landed fixes from the series and kept them nowhere: merged,
    the fixes were gone from the stack. Refused before anything moves, naming the rule's
    command; with the line the hint names, the commit holds them."""
    import re

    excludes = tmp_path / "global-ignore"
    excludes.write_text("*.patch\n")
    git(clean.root, "config", "core.excludesFile", str(excludes))
    before = snapshot(clean.root)
    code, out, err = clean.bump("--open-pr")
    assert code == 2 and "nothing was moved" in err, out + err
    assert "git check-ignore -v series/vllm/upstreamed/" in err, err
    assert snapshot(clean.root) == before and not clean.forge.requests
    (line,) = [c for c in re.findall(r"`([^`]*)`", err.split("hint:")[1]) if c.startswith("!")]
    with (clean.root / ".gitignore").open("a") as rules:  # as the hint says
        rules.write(line + "\n")
    git(clean.root, "commit", "-q", "-am", "Patches are the stack's")
    code, out, err = clean.bump("--open-pr", "--json")
    assert code == 0, out + err
    files = git(clean.remote, "ls-tree", "-r", "--name-only",
                f"patchforge/bump-nightly-{clean.c3}").split()
    assert "series/vllm/upstreamed/compress.patch" in files, files


def test_a_kept_bump_report_nested_too_deep_is_no_internal_error(
        tmp_path, registry_server, forge_server):
    """A stopped bump keeps its report in .patchforge/bump/report.json, which the next
    `bump --open-pr` reads to propose the finished move; one nested a hundred thousand deep
    ended that run in "internal error: RecursionError", exit 70. It is read as no report, as
    one cut short is."""
    scenario = Scenario(tmp_path, registry_server, forge_server, conflict=True)
    tag = f"nightly-{scenario.c3}"
    code, out, err = scenario.bump("--open-pr")
    assert code == 1, err
    (scenario.root / ".patchforge/bump/report.json").write_text("[" * 100000 + "]" * 100000)
    code, _, err = cli_in_process(scenario.root, "rebase", "--skip")
    assert code == 1, err  # the fix set aside is in none of the overlays
    code, out, err = scenario.bump("vllm", "--to", tag, "--open-pr", "--json")
    assert code in (0, 1), err
    assert "internal error" not in err


@pytest.mark.parametrize("fragment", ["#\x1b]0;owned\x07\x1b[2J", "#\u202etop", "\n"])
def test_the_pull_requests_address_printed_and_kept_is_its_own_never_the_forges_text(
        clean, fragment):
    """The forge's answer to `bump --open-pr` named the pull request with terminal escapes (or
    a bidirectional override, or a newline) after it: the command printed that text as it
    came (the terminal's title and screen the forge's) and kept it in the report. The
    address printed and kept is the pull request's, made of its checked parts, as `pr`
    records it."""
    clean.forge.html_url_template = "https://github.com/{repo}/pull/{number}" + fragment
    code, out, err = clean.bump("--open-pr")
    assert code == 0, err
    assert "pull request: opened https://github.com/team/stack/pull/1\n" in err, err
    assert not any(ch in err + out for ch in "\x1b\x07\u202e"), err
    report = json.loads((clean.root / ".patchforge" / "bump" / "report.json").read_text())
    assert report["pull_request"]["url"] == "https://github.com/team/stack/pull/1"


def test_a_pull_request_address_of_another_repository_is_refused(clean):
    """An answer naming another repository's pull request was printed and kept as the bump's;
    it is refused (exit 2), naming it."""
    clean.forge.html_url_template = "https://github.com/mallory/elsewhere/pull/{number}"
    code, out, err = clean.bump("--open-pr")
    assert code == 2, err
    assert "https://github.com/mallory/elsewhere/pull/1" in err and "team/stack#1" in err, err


def test_a_stack_pinned_through_an_image_is_told_its_repository_to_bump_from(clean):
    """A stack pinned through a nightly image (upstream.lock's `image`) ran `bump --dry-run`
    without `--image`: "no image repository to look for nightlies in", with the hint to give
    one as if it had none. The hint names the pinned image's repository, as `--image` takes
    it; nothing is written."""
    code, out, err = cli_in_process(clean.root, "upstream", "pin", "vllm", "--at",
                                    f"{clean.image_repo}:nightly-{clean.c0}", "--force")
    assert code == 0, err
    assert json.loads((clean.root / "upstream.lock").read_text())["image"]["reference"] \
        == f"{clean.image_repo}:nightly-{clean.c0}"
    before = snapshot(clean.root)
    code, out, err = cli_in_process(clean.root, "bump", "vllm", "--dry-run")
    assert code == 2, (out, err)
    assert "no image repository to look for nightlies in" in err, err
    assert f"`--image {clean.image_repo}` looks for nightlies in its repository" in err, err
    assert snapshot(clean.root) == before


def test_the_pin_a_bump_writes_is_read_by_every_command_that_checks_its_label(clean):
    """A git pin's label `nightly-<sha>` names its commit, and a lock where it names another
    commit is refused: the pin `bump` itself writes (the label and the commit of one nightly)
    is read by every command that checks it, and moving it by hand to another commit is not."""
    code, out, err = clean.bump("--to", f"nightly-{clean.c3}", "--json")
    assert code in (0, 1) and json.loads(out)["outcome"] == "moved", out + err
    pin = json.loads((clean.root / "upstream.lock").read_text())["upstreams"]["vllm"]
    assert (pin["label"], pin["commit"]) == (f"nightly-{clean.c3}", clean.c3)
    for command in (("fetch",), ("status",), ("lint",), ("verify",), ("overlays", "--check")):
        code, out, err = cli_in_process(clean.root, *command)
        assert code in (0, 1), (command, out + err)
        assert "names two revisions" not in err and "not the locked commit" not in err, err
    # A merge of two bumps, resolved line by line: one side's commit (and tree), the other's label.
    old_tree = git(clean.upstream.path, "rev-parse", f"{clean.c1}^{{tree}}").strip()
    lock = (clean.root / "upstream.lock").read_text()
    (clean.root / "upstream.lock").write_text(
        lock.replace(f'"commit": "{clean.c3}"', f'"commit": "{clean.c1}"')
        .replace(f'"tree": "{pin["tree"]}"', f'"tree": "{old_tree}"'))
    code, out, err = cli_in_process(clean.root, "status")
    assert code == 2 and f"names commit {clean.c3}, not the locked commit {clean.c1}" in err, \
        out + err


@pytest.mark.parametrize("said", ["other", "same"])
def test_an_image_label_naming_a_commit_in_upper_case_hex_is_checked(clean, said):
    """The newest nightly's image labels its commit in upper-case hex. `bump` read such a label
    as naming no commit and so skipped its check that the image is the tag's commit: a nightly
    whose image was built from another commit became the target. Now the label is read in
    either case: another commit's image is skipped with the reason, the tag's own is taken."""
    named = clean.c2 if said == "other" else clean.c3
    clean.registry.push_image(REPO, f"nightly-{clean.c3}",
                              {"vllm.commit": named.upper(),
                               "org.opencontainers.image.version": "0.0.dev"},
                              created="2026-09-12T05:27:48Z")
    code, out, err = clean.bump("--dry-run", "--json")
    doc = json.loads(out)
    reasons = {s["tag"]: s["reason"] for s in doc["search"]["skipped"]}
    if said == "other":
        assert doc.get("target", {}).get("tag") != f"nightly-{clean.c3}", (out, err)
        assert reasons.get(f"nightly-{clean.c3}") == \
            f"its image labels name commit {clean.c2.lower()}, not {clean.c3[:12]}", reasons
    else:
        assert code == 0, err
        assert doc["target"]["tag"] == f"nightly-{clean.c3}", doc
        assert f"nightly-{clean.c3}" not in reasons
