"""`patchforge status --html`: the self-contained report, built for a real project (a small git
upstream whose next release lands one fix, moves another and conflicts with a third; the forwarded
PR answered by the test forge) and rendered by headless Chromium."""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from helpers.cli import run_subprocess
from helpers.git import git
from patchforge.project import Project
from patchforge.report import render_html_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install -y chromium)")

CALC_V1 = b'''"""calc: a small upstream."""


def add(a, b):
    return a + b


def div(a, b):
    return a / b
'''
CALC_FIXED = CALC_V1.replace(b"    return a / b\n",
                             b"    if b == 0:\n        raise ZeroDivisionError(\"div by zero\")\n"
                             b"    return a / b\n")
TEXT_V1 = b"def shout(s):\n    return s.upper()\n\n\ndef whisper(s):\n    return s.lower()\n"
TEXT_FIXED = TEXT_V1.replace(b"    return s.lower()\n", b"    return s.lower() + '...'\n")
CONF_V1 = b"TIMEOUT = 30\nRETRIES = 3\nBACKOFF = 2\n"
CONF_FIXED = b"TIMEOUT = 30\nRETRIES = 5\nBACKOFF = 2\n"
CONF_V2 = b"TIMEOUT = 30\nRETRIES = 4  # v2 default\nBACKOFF = 2\n"
HOSTILE = '<script>alert("x")</script> & <b>bold</b>'


def pf(project: Path, *args: str, check: int = 0) -> subprocess.CompletedProcess:
    """patchforge ARGS in a process of its own, run in `project`, exiting with `check`."""
    return run_subprocess(None, *args, cwd=project, expect=check)


@pytest.fixture
def project(tmp_path, forge_server):
    """v1 pinned, three patches imported from overlays; v2 lands #1, shifts #2, conflicts #3."""
    up = tmp_path / "up"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    for name, data in (("calc.py", CALC_V1), ("text.py", TEXT_V1), ("conf.py", CONF_V1)):
        (up / name).write_bytes(data)
    git(up, "add", ".")
    git(up, "commit", "-q", "-m", "v1")
    git(up, "tag", "v1")
    (up / "calc.py").write_bytes(CALC_FIXED)
    (up / "text.py").write_bytes(b"# a header upstream added\n\n" + TEXT_V1)
    (up / "conf.py").write_bytes(CONF_V2)
    git(up, "commit", "-q", "-am", "v2: guard div by zero (#7)")
    git(up, "tag", "v2")
    v2 = git(up, "rev-parse", "v2").strip()

    proj = tmp_path / "proj"
    proj.mkdir()
    pf(proj, "init")
    config = proj / "patchforge.toml"
    text = config.read_text()
    text = re.sub(r'api-url = "[^"]*"', f'api-url = "{forge_server.url}"', text)
    config.write_text(text)
    pf(proj, "upstream", "add", "calc", "--git", str(up), "--at", "v1", "--follow", "main",
       "--install-root", "/opt/calc")
    overlays = tmp_path / "overlays"
    overlays.mkdir()
    for name, path, data, desc in (
            ("div-by-zero", "calc.py", CALC_FIXED, "calc: guard div by zero"),
            ("whisper-ellipsis", "text.py", TEXT_FIXED, f"text: whisper trails off {HOSTILE}"),
            ("more-retries", "conf.py", CONF_FIXED, "conf: five retries")):
        (overlays / path).write_bytes(data)
        pf(proj, "import", "overlay", str(overlays / path), "--upstream", "calc", "--path", path,
           "--name", name, "-m", desc)
    patch = proj / "series" / "calc" / "div-by-zero.patch"
    lines = patch.read_bytes().split(b"\n")
    lines.insert(1, b"Forwarded: https://github.com/acme/calc/pull/7")
    patch.write_bytes(b"\n".join(lines))
    forge_server.add_pull("acme/calc", 7, merged=True, merge_commit_sha=v2, state="closed",
                          title="Guard div by zero")
    return proj


def chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=180)


def png_facts(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values in the decompressed image data)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        length = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def render_in_chromium(html_path: Path, tmp_path: Path) -> tuple[bytes, str]:
    png = tmp_path / "report.png"
    shot = chromium([f"--screenshot={png}", "--window-size=1200,900", html_path.as_uri()],
                    tmp_path)
    assert png.exists(), shot.stderr[-2000:]
    dom = chromium(["--dump-dom", html_path.as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    return png.read_bytes(), dom.stdout


def test_status_html_report_for_a_newer_release(project, tmp_path, forge_server):
    report = tmp_path / "out" / "report.html"
    proc = pf(project, "status", "--against", "v2", "--html", str(report), check=1)
    assert b"div-by-zero.patch" in proc.stdout  # the terminal table is printed as well
    page = report.read_text("utf-8")

    # self-contained: no script, no external resource, a CSP that forbids fetching anything
    assert "<script" not in page.lower().replace("&lt;script", "")
    assert not re.search(r"\b(src|srcset)\s*=", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page
    # everything from files is escaped: the hostile description shows as text
    assert html_escaped(HOSTILE) in page and HOSTILE not in page

    for name in ("div-by-zero.patch", "whisper-ellipsis.patch", "more-retries.patch"):
        assert name in page
    states = dict(re.findall(r'id="patch-\d+">.*?data-state="(\w+)".*?<code>calc/([\w.-]+)</code>',
                             page))
    states = {v: k for k, v in states.items()}
    assert states == {"div-by-zero.patch": "upstreamed", "whisper-ellipsis.patch": "offset",
                      "more-retries.patch": "conflict"}
    # the forwarded PR, as the forge answered it, and whether the target has it
    assert 'href="https://github.com/acme/calc/pull/7"' in page
    assert "Guard div by zero" in page and "included in the target" in page
    assert "3 of 3" not in page and "2 of 3 patches need attention" in page
    assert forge_server.paths("GET")  # the forge really was asked


@needs_chromium
def test_report_renders_in_headless_chromium(project, tmp_path):
    report = tmp_path / "report.html"
    pf(project, "status", "--against", "v2", "--html", str(report), check=1)
    png, dom = render_in_chromium(report, tmp_path)
    width, height, distinct = png_facts(png)
    assert (width, height) == (1200, 900)
    assert len(png) > 20_000 and distinct > 50, "the screenshot is (nearly) blank"
    for needle in ("div-by-zero.patch", "whisper-ellipsis.patch", "more-retries.patch",
                   'data-state="upstreamed"', 'data-state="offset"', 'data-state="conflict"',
                   ">upstreamed<", ">conflict<"):
        assert needle in dom
    # the browser saw the hostile text as text, not as an element
    assert "<b>bold</b>" not in dom and "&lt;b&gt;bold&lt;/b&gt;" in dom


@needs_chromium
def test_report_shows_the_range_diff_of_the_last_rebase(project, tmp_path):
    stop = pf(project, "rebase", "--to", "v2", check=3)
    assert b"more-retries" in stop.stderr
    conf = project / ".patchforge" / "work" / "calc" / "conf.py"
    assert b"<<<<<<<" in conf.read_bytes()
    conf.write_bytes(b"TIMEOUT = 30\nRETRIES = 5  # v2 default, five for us\nBACKOFF = 2\n")
    done = pf(project, "rebase", "--continue", "--json")
    summary = json.loads(done.stdout)
    assert summary["range_diff"]
    # The rebase keeps its summary for the report; without it the report rebuilds the last
    # rebase from the ledger's history (series/history.jsonl): the results, but no range-diff.
    saved = project / ".patchforge" / "last-rebase.json"
    assert json.loads(saved.read_text())["range_diff"] == summary["range_diff"]
    saved.unlink()
    from_history = tmp_path / "from-history.html"
    pf(project, "status", "--html", str(from_history))
    page = from_history.read_text("utf-8")
    assert "Last rebase" in page and ">resolved<" in page and ">dropped<" in page
    assert "Range-diff" not in page
    assert "History" in page and "calc/more-retries.patch" in page
    # With the summary of the last rebase (as `rebase --json` prints it), the range-diff too.
    saved.write_bytes(done.stdout)

    report = tmp_path / "after.html"
    pf(project, "status", "--html", str(report))
    page = report.read_text("utf-8")
    assert "Last rebase" in page and "Range-diff of the old series" in page
    assert 'class="gone"' in page  # the landed one left the series
    # the hand-resolved one: a one-line patch whose line changed is "another patch" to range-diff
    assert re.search(r'class="new">-:\s+-+ &gt; \d+:\s+\w+ more-retries.patch', page)
    assert re.search(r'class="same">\d+:\s+\w+ = \d+:\s+\w+ whisper-ellipsis.patch', page)
    assert ">dropped<" in page and ">resolved<" in page
    _, dom = render_in_chromium(report, tmp_path)
    assert "more-retries.patch" in dom and "five for us" in dom and "Range-diff" in dom


@needs_chromium
def test_report_says_a_rebase_is_stopped_and_a_fix_is_set_aside(project, tmp_path):
    """`status` exits 1 and prints a `note:` while a rebase is stopped or a fix waits in
    skipped/; the page left the document's notes out and greeted the user with "All 3 patches
    apply and are still needed" in green (and the text output ended with those words while a
    rebase was stopped). The browser now shows each note, and no such banner."""
    pf(project, "rebase", "--to", "v2", check=3)
    stopped = tmp_path / "stopped.html"
    text = pf(project, "status", "--html", str(stopped), check=1)
    # The text output's last line did not say all was well either.
    assert b"still needed" not in text.stdout and b"needs attention" in text.stdout
    _, dom = render_in_chromium(stopped, tmp_path)
    assert "a rebase is stopped at more-retries.patch" in dom
    assert "patches apply and are still needed" not in dom
    pf(project, "rebase", "--skip", check=1)
    skipped = tmp_path / "skipped.html"
    pf(project, "status", "--html", str(skipped), check=1)
    _, dom = render_in_chromium(skipped, tmp_path)
    assert "more-retries.patch" in dom and "bring-back" in dom
    assert "patches apply and are still needed" not in dom


def test_report_tolerates_missing_and_broken_sources(project, tmp_path):
    """A stale status document, a malformed last-rebase.json and a history with junk lines:
    each leaves its part out or shows what it can, and the page is still written."""
    (project / ".patchforge").mkdir(exist_ok=True)
    (project / ".patchforge" / "last-rebase.json").write_text("{not json")
    (project / "series" / "history.jsonl").write_bytes(
        b'{"event": "added", "patch": "div-by-zero.patch", "date": "2026-01-02"}\n'
        b"garbage\n[1, 2]\n"
        b'{"event": "rebased", "range_diff": "1:  aaaaaaa = 1:  bbbbbbb x.patch\\n",'
        b' "upstreams": {"calc": {"from": "v0", "to": "v1"}}}\n')
    document = {
        "targets": {"calc": {"base": "a" * 40, "commit": "b" * 40, "label": "v9",
                             "version": None}},
        "patches": [
            {"upstream": "calc", "name": "gone-since.patch", "state": "obsolete",
             "evidence": ["file \udcff gone"], "files": [{"path": "x\udcff.py", "hunks": [None]}],
             "hunks": {"total": 1, "landed": 0}, "forwarded": {"url": "javascript:alert(1)"},
             "drop_when": {"condition": "merged x", "true": None, "reason": "no answer"},
             "needs_attention": True},
            "not a patch",
        ],
        "needs_attention": True,
    }
    page = render_html_report(Project.discover(project), document)
    assert "gone-since.patch" in page and "obsolete" in page
    assert 'href="javascript' not in page  # only http(s) URLs become links
    assert "x\ufffd.py" in page  # an undecodable name is shown, not fatal
    assert "Range-diff of the old series" in page and "x.patch" in page
    assert "History" in page and "added" in page
    # and through the real command, with the real status document
    out = tmp_path / "r.html"
    pf(project, "status", "--html", str(out))
    assert out.read_bytes().startswith(b"<!DOCTYPE html>")
    # JSON of another shape (another version's, a hand's): `"patches": 5` ended the command
    # with an internal error (exit 70) and no page. The page is written without that part
    # (its range-diff, a text, is shown).
    (project / ".patchforge" / "last-rebase.json").write_text(
        '{"patches": 5, "upstreams": {}, "range_diff": "1:  aaaaaaa = 1:  bbbbbbb y.patch"}')
    pf(project, "status", "--html", str(out))
    page = out.read_text()
    assert "div-by-zero.patch" in page and "y.patch" in page and "History" in page
    # a row whose names are not strings (a list where a name was) is shown without them
    (project / ".patchforge" / "last-rebase.json").write_text(
        '{"patches": [{"upstream": ["calc"], "name": {"n": 1}, "action": "kept"},'
        ' {"upstream": "calc", "name": "z.patch", "action": "kept"}], "upstreams": {}}')
    pf(project, "status", "--html", str(out))
    assert "z.patch" in out.read_text()
    # History events of other shapes (names that are not strings, a rename from an object, a
    # landing that is a number, an end that is a text): each row shown as it is, the rest of
    # the history with it, never the section left out.
    with (project / "series" / "history.jsonl").open("ab") as history:
        history.write(
            b'{"event": "renamed", "upstream": "calc", "patch": 5, "renamed_from": {"a": 1}}\n'
            b'{"event": ["dropped"], "upstream": ["calc"], "patch": "odd.patch",'
            b' "landed_in": 1234567890123456, "from": "v1", "to": {"label": 7}}\n'
            b'{"event": "renamed", "upstream": "calc", "patch": "new-name.patch",'
            b' "renamed_from": "div-by-zero.patch"}\n')
    pf(project, "status", "--html", str(out))
    page = out.read_text()
    assert "History" in page and "new-name.patch" in page and "odd.patch" in page, page
    assert "landed in 123456789012" in page


def test_report_leaves_out_a_history_line_nested_too_deep(project, tmp_path):
    """A history line of `[` a hundred thousand deep (200 KB, a damaged or hostile merge of
    series/history.jsonl): `status` warned of the line, then `status --html` ended with an
    internal error (exit 70, RecursionError) and no page. The page is written now, the line
    left out as any other unreadable one, the rest of the history shown; a page already there
    is replaced whole or not at all."""
    history = project / "series" / "history.jsonl"
    history.write_bytes(
        b'{"event": "added", "patch": "div-by-zero.patch", "date": "2026-01-02"}\n'
        + b"[" * 100_000 + b"]" * 100_000 + b"\n"
        + b'{"event": "added", "patch": "\xff-not-utf8.patch"}\n')
    out = tmp_path / "r.html"
    run = pf(project, "status", "--html", str(out))  # (exit 0, as without the line)
    assert b"history.jsonl:2: not a JSON line: nested deeper than patchforge reads" \
        in run.stderr, run.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "History" in page
    assert "div-by-zero.patch" in page


def test_report_overwrites_atomically_and_needs_no_network(project, tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    out.write_text("old")
    pf(project, "--offline", "status", "--html", str(out))
    assert out.read_text("utf-8").startswith("<!DOCTYPE html>")
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".r.html.")]


def html_escaped(text: str) -> str:
    import html
    return html.escape(text, quote=True)


@needs_chromium
def test_the_report_never_shows_a_rebase_the_checkout_has_not_had(project, tmp_path):
    """The last rebase's summary is local state (.patchforge/last-rebase.json): it outlived a
    checkout of the stack as it was before that rebase (or a `git pull` of a teammate's later
    one), and the report for reviewers showed "Last rebase v1 -> v2" and its range-diff over
    a series still pinned at v1. A summary is shown only when the lock is where it moved the
    series; otherwise the report goes by the checkout's own history."""
    import shutil

    before = tmp_path / "before"
    shutil.copytree(project / "series", before / "series")
    shutil.copy2(project / "upstream.lock", before / "upstream.lock")
    pf(project, "rebase", "--to", "v2", check=3)
    conf = project / ".patchforge" / "work" / "calc" / "conf.py"
    conf.write_bytes(b"TIMEOUT = 30\nRETRIES = 5  # v2 default, five for us\nBACKOFF = 2\n")
    pf(project, "rebase", "--continue")
    assert (project / ".patchforge" / "last-rebase.json").exists()
    # `git checkout` of the stack before the rebase: its series and lock come back.
    shutil.rmtree(project / "series")
    shutil.copytree(before / "series", project / "series")
    shutil.copy2(before / "upstream.lock", project / "upstream.lock")
    report = tmp_path / "checked-out.html"
    pf(project, "status", "--html", str(report))
    _, dom = render_in_chromium(report, tmp_path)
    assert "calc/div-by-zero.patch" in dom
    assert "Range-diff" not in dom and "Last rebase" not in dom, dom


@needs_chromium
def test_report_shows_the_long_description_of_the_description_field(project, tmp_path):
    """DEP-3's long description (the Description field's continuation lines: the "why" of a
    fix, which every patch of the example stack has) was in no line of `status --html`: the
    page showed the subject and the free text below the header only. Both are in the page's
    Description now, as the browser reads it, the long description first."""
    patch = project / "series" / "calc" / "more-retries.patch"
    text = patch.read_bytes()
    subject = b"Description: conf: five retries\n"
    assert subject in text
    patch.write_bytes(text.replace(subject, subject + b" The service drops <b>one</b> request in"
                                   b" ten at start-up.\n .\n Three was too few.\n"))
    report = tmp_path / "report.html"
    pf(project, "status", "--html", str(report))
    _, dom = render_in_chromium(report, tmp_path)
    section = dom[dom.index("calc/more-retries.patch"):]
    section = section[:section.index("</section>")]
    assert ("The service drops &lt;b&gt;one&lt;/b&gt; request in ten at start-up.\n\n"
            "Three was too few.") in section, section


@needs_chromium
def test_a_bug_url_is_linked_whole_and_nothing_else_of_the_page_changes(project, tmp_path):
    """A DEP-3 `Bug:` URL holding `">` (or ending in a bracket of its own, `Foo_(bar)`) was cut
    short: its last characters were taken for punctuation, and the link opened another page
    than the header names. The link, as Chromium reads the page, is the whole URL; brackets
    around a URL and a sentence's comma after it are not part of it; a URL that is not
    http(s) is no link; and the page is the one without the field but for its own line."""
    from html.parser import HTMLParser

    plain = tmp_path / "plain.html"
    pf(project, "status", "--html", str(plain))
    urls = ['https://bugs.example.org/show?id=7&q=">', "https://en.wikipedia.org/wiki/Foo_(bar)",
            'https://bugs.example.org/a">b<"c']
    value = (f"{urls[0]} {urls[1]} (see <{urls[2]}>, https://bugs.example.org/8.) "
             "javascript:alert(1) file:///etc/passwd")
    patch = project / "series" / "calc" / "more-retries.patch"
    patch.write_bytes(patch.read_bytes().replace(b"\n\n", f"\nBug: {value}\n\n".encode(), 1))
    report = tmp_path / "report.html"
    pf(project, "status", "--html", str(report))

    class Fields(HTMLParser):
        def __init__(self):
            super().__init__()
            self.at, self.bug, self.links, self.text = None, None, [], {}

        def handle_starttag(self, tag, attrs):
            if tag == "a" and self.at == "Bug":
                self.links.append(dict(attrs).get("href"))
            if tag in ("dt", "dd"):
                self.at = tag if tag == "dt" else self.at

        def handle_data(self, data):
            if self.at == "dt":
                self.at = data
            elif self.at == "Bug":
                self.text["Bug"] = self.text.get("Bug", "") + data

        def handle_endtag(self, tag):
            if tag == "dd":
                self.at = None

    _, dom = render_in_chromium(report, tmp_path)
    fields = Fields()
    fields.feed(dom)
    assert fields.links == [*urls, "https://bugs.example.org/8"], fields.links
    assert fields.text["Bug"] == value  # every character shown, nothing taken as markup
    # The page is the one without the field, but for its line (and the patch's hash).
    _, before = render_in_chromium(plain, tmp_path)
    start = dom.index("<dt>Bug</dt>")
    without = dom[:start] + dom[dom.index("</dd>", start) + len("</dd>"):]
    assert re.sub(r"[0-9a-f]{12,64}", "H", without) == re.sub(r"[0-9a-f]{12,64}", "H", before)
