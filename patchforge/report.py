"""The HTML status report: one self-contained page for reviewers who would rather look than read a
terminal (`patchforge status --html FILE`).

It owns the page only: the status document comes from `ops.status` (the same dict `status --json`
prints), patch headers from the project's patch files, and the last rebase from what the rebase left
behind (`.patchforge/last-rebase.json`, or the last rebase record in `series/history.jsonl`). Every
one of those is read tolerantly: a missing or malformed source leaves its section out, never the
page. The page has inline CSS only, no script and no external resource (a Content-Security-Policy
says so to the browser), and every piece of text from a file is escaped.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge import __version__
from patchforge.fsutil import parse_json, write_destination
from patchforge.errors import PatchforgeError

if TYPE_CHECKING:
    from patchforge.project import Project

# Display order and colour of states (status states, then rebase actions).
STATE_ORDER = ("conflict", "obsolete", "partial", "fuzz", "unsure", "empty", "upstreamed",
               "offset", "applies")
STATE_CLASS = {"applies": "ok", "offset": "ok", "clean": "ok", "fuzz": "warn", "partial": "warn",
               "unsure": "warn", "merged": "warn", "resolved": "warn", "conflict": "bad",
               "obsolete": "bad", "upstreamed": "info", "dropped": "info", "skipped": "muted",
               "empty": "warn"}
HEADER_FIELDS = ("Author", "Origin", "Bug", "Forwarded", "Upstream-Status", "Applied-Upstream",
                 "Profiles", "Drop-When", "Keeps", "Base", "Last-Update")
MAX_DIFF_CHARS = 200_000  # a longer diff is cut, so one huge patch cannot bury the page
HISTORY_ROWS = 20

CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;--ok:#1a7f37;--ok-bg:#dafbe1;
--warn:#9a6700;--warn-bg:#fff8c5;--bad:#cf222e;--bad-bg:#ffebe9;--info:#0969da;--info-bg:#ddf4ff;
--mono:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,Consolas,monospace}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
color:var(--fg);background:#fff}
header.top{background:#24292f;color:#fff;padding:18px 32px}
header.top h1{margin:0;font-size:20px;font-weight:600}
header.top .sub{color:#c9d1d9;font-size:13px;margin-top:2px}
main{padding:20px 32px 48px;max-width:1400px}
h2{font-size:17px;margin:28px 0 10px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:0}
code,pre,.mono{font-family:var(--mono);font-size:12.5px}
a{color:var(--info);text-decoration:none}
a:hover{text-decoration:underline}
.banner{padding:10px 14px;border-radius:6px;margin:0 0 16px;font-weight:600}
.banner.bad{background:var(--bad-bg);color:var(--bad);border:1px solid #ffcecb}
.banner.ok{background:var(--ok-bg);color:var(--ok);border:1px solid #aceebb}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0 4px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:110px;background:var(--bg)}
.card .n{font-size:22px;font-weight:600}
.card .l{color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%;margin:4px 0 8px}
th,td{text-align:left;vertical-align:top;padding:6px 10px;border-bottom:1px solid var(--line)}
th{background:var(--bg);font-size:12px;text-transform:uppercase;letter-spacing:.03em;color:var(--muted)}
td.num{color:var(--muted);width:2.5em}
td.nowrap{white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
white-space:nowrap;border:1px solid transparent}
.badge.ok{background:var(--ok-bg);color:var(--ok);border-color:#aceebb}
.badge.warn{background:var(--warn-bg);color:var(--warn);border-color:#f5e0a0}
.badge.bad{background:var(--bad-bg);color:var(--bad);border-color:#ffcecb}
.badge.info{background:var(--info-bg);color:var(--info);border-color:#b6e3ff}
.badge.muted{background:var(--bg);color:var(--muted);border-color:var(--line)}
.muted{color:var(--muted)}
.patch{border:1px solid var(--line);border-radius:6px;margin:14px 0;overflow:hidden}
.patch>.head{display:flex;align-items:center;gap:10px;padding:10px 14px;background:var(--bg);
border-bottom:1px solid var(--line);flex-wrap:wrap}
.patch>.head .subject{color:var(--muted)}
.patch>.body{padding:10px 14px}
.patch.attn{border-left:4px solid var(--bad)}
dl.fields{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:4px 0 10px}
dl.fields dt{color:var(--muted);font-weight:600}
dl.fields dd{margin:0;overflow-wrap:anywhere}
ul.evidence{margin:4px 0 10px;padding-left:20px}
ul.evidence li{font-family:var(--mono);font-size:12.5px}
.hunks{display:flex;flex-wrap:wrap;gap:4px;margin:2px 0 8px}
.hunk{font-family:var(--mono);font-size:11.5px;border:1px solid var(--line);border-radius:4px;padding:1px 6px}
.hunk.landed{background:var(--info-bg);border-color:#b6e3ff}
.hunk.failed{background:var(--bad-bg);border-color:#ffcecb}
.hunk.fuzz{background:var(--warn-bg);border-color:#f5e0a0}
details{margin:6px 0}
summary{cursor:pointer;color:var(--info)}
pre{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:10px 12px;
overflow-x:auto;margin:6px 0;line-height:1.4}
pre .add{color:var(--ok)}
pre .del{color:var(--bad)}
pre .hunkhdr{color:#8250df}
pre .filehdr{font-weight:600}
pre .same{color:var(--muted)}
pre .changed{color:var(--warn);font-weight:600}
pre .gone{color:var(--bad);font-weight:600}
pre .new{color:var(--ok);font-weight:600}
.desc{white-space:pre-wrap;font-family:var(--mono);font-size:12.5px;color:#3b434b;margin:4px 0 10px}
footer{color:var(--muted);font-size:12px;margin-top:36px}
"""


def all_apply(count: int, *, still_needed: bool = False) -> str:
    """"all 3 patches apply", and for one patch "1 patch applies" (not "all 1 patches"); a
    series without a patch yet (right after `upstream add`) "no patches yet", not "all 0
    patches apply and are still needed"."""
    if count == 0:
        return "no patches yet"
    if count == 1:
        return "1 patch applies" + (" and is still needed" if still_needed else "")
    return f"all {count} patches apply" + (" and are still needed" if still_needed else "")


def need_attention(count: int, of: int | None = None) -> str:
    """"1 patch needs attention", "3 patches need attention" ("2 of 5 patches ...")."""
    among = f" of {of}" if of is not None else ""
    noun = "patch" if (of if of is not None else count) == 1 else "patches"
    return f"{count}{among} {noun} {'needs' if count == 1 else 'need'} attention"


def _object_at(doc: dict, key: str) -> dict:
    """doc[key] when it is an object, else an empty one: the documents read here may be stale
    or damaged, and a part that is missing is left out of the page."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _string_at(doc: dict, key: str) -> str:
    """doc[key] when it is a string, else "" (as `_object_at`, for a row's names)."""
    value = doc.get(key)
    return value if isinstance(value, str) else ""


def write_html_report(project: Project, path, status_document: dict) -> None:
    """Write the report for `status_document` (the `status --json` document) to `path`."""
    project.refuse_own_destination(path, new_directory=True)  # a reports/ directory is made
    write_destination(Path(path), render_html_report(project, status_document).encode("utf-8"))


def render_html_report(project: Project, status_document: dict) -> str:
    """The page as text. Pure apart from reading patch headers and the last-rebase record."""
    doc = status_document if isinstance(status_document, dict) else {}
    patches = [p for p in doc.get("patches") or [] if isinstance(p, dict)]
    targets = _object_at(doc, "targets")
    headers = {(p.get("upstream"), p.get("name")): _read_header(project, p) for p in patches}
    rebase = load_last_rebase(project)
    history = load_history(project, limit=None)
    title = f"patchforge status: {_project_name(project)}"

    out: list[str] = []
    w = out.append
    w("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
    # No script, no external resource of any kind: the page must render the same offline.
    w("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n")
    w("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
    w(f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n")
    w(f"<header class=\"top\"><h1>{_e(title)}</h1>"
      f"<div class=\"sub\">{_e(_target_line(targets))}</div></header>\n<main>\n")

    attention = [p for p in patches if p.get("needs_attention")]
    # What the text output prints as `note:` lines (a rebase stopped, an open edit, a fix set
    # aside in skipped/, a patch file the series does not list) needs attention as much as a
    # patch: without it the page called a project with a stopped rebase all well.
    notes = [n for n in doc.get("notes") or [] if isinstance(n, str)]
    unlisted = [u for u in doc.get("unlisted") or [] if isinstance(u, dict)]
    for note in notes:
        w(f"<div class=\"banner bad\">{_e(note)}</div>\n")
    for entry in unlisted:
        w(f"<div class=\"banner bad\">{_e(entry.get('path'))}: a patch file the series does "
          "not list (in no overlay and no rebase)</div>\n")
    # A fix kept under upstreamed/ whose landing the target took back: in no overlay.
    for entry in [*(doc.get("reverted") or []), *(doc.get("gone_upstream") or [])]:
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            w(f"<div class=\"banner bad\">{_e(entry['message'])}</div>\n")
    # One kept there that does not parse: judged by nothing.
    for entry in doc.get("unparsed") or []:
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            from patchforge.reverts import unparsed_line

            w(f"<div class=\"banner bad\">{_e(unparsed_line(entry))}</div>\n")
    if attention:
        w(f"<div class=\"banner bad\">{need_attention(len(attention), len(patches))}"
          "</div>\n")
    elif patches and not notes and not unlisted and not doc.get("needs_attention"):
        said = all_apply(len(patches), still_needed=True)
        w(f"<div class=\"banner ok\">{said[0].upper()}{said[1:]}</div>\n")
    w(_state_cards(patches))
    w(_targets_table(targets))
    w(_series_tables(patches, headers))
    w("<h2 id=\"patches\">Patches</h2>\n")
    if not patches:
        w("<p class=\"muted\">The series is empty.</p>\n")
    for index, patch in enumerate(patches, 1):
        w(_patch_section(index, patch, headers.get((patch.get("upstream"), patch.get("name")))))
    # The history's records (another version's, a hand's) are read by the ledger's rules
    # (follow_fixes, which gives an event whose names are not strings no fix) and shown
    # through str(): a value of another shape shows as what it is, and the page is written.
    w(_rebase_section(rebase, _renamed_since_run(history)))
    w(_history_section(history))
    w(f"<footer>Generated by patchforge {_e(_version())} from the status document "
      "(<code>patchforge status --json</code> gives the same data).</footer>\n")
    w("</main>\n</body>\n</html>\n")
    return "".join(out)


# --- sources, read tolerantly -----------------------------------------------------------------

def load_last_rebase(project: Project) -> dict | None:
    """The last completed rebase, as a `rebase --json`-shaped summary: the saved summary
    `.patchforge/last-rebase.json` when it is there, else rebuilt from `series/history.jsonl`
    (the ledger's per-patch events of the last rebase run; they carry no range-diff). None when
    neither says anything."""
    root = Path(getattr(project, "root", "."))
    candidate = _read_json(root / ".patchforge" / "last-rebase.json")
    if isinstance(candidate, dict) and (candidate.get("patches") or candidate.get("range_diff")
                                        or candidate.get("upstreams")) \
            and _moved_to_the_lock(project, candidate):
        return candidate
    history = load_history(project, limit=None)
    for record in reversed(history):
        if isinstance(record.get("summary"), dict):  # a whole summary stored as one record
            return record["summary"]
        if isinstance(record.get("range_diff"), str):
            return record
        if record.get("run"):
            return _summary_of_run(history, record["run"])
    return None


def _moved_to_the_lock(project: Project, summary: dict) -> bool:
    """Whether a saved summary's rebase is the one this checkout is at: every upstream it moved
    is pinned where it moved it. The summary is local state (.patchforge/), and outlives a
    `git pull` of a teammate's later rebase or a checkout of an older commit of the stack: the
    report then showed a rebase the reviewed series had not had."""
    upstreams = summary.get("upstreams")
    if not isinstance(upstreams, dict):
        return True
    try:
        pins = project.lock.upstreams
    except Exception:  # noqa: BLE001 - a report reads tolerantly; status reports the lock
        return True
    for name, moved in upstreams.items():
        to = moved.get("to_commit") if isinstance(moved, dict) else None
        pin = pins.get(name)
        if to and (pin is None or pin.commit != to):
            return False
    return True


def _summary_of_run(history: list[dict], run) -> dict:
    summary: dict = {"upstreams": {}, "patches": [], "range_diff": ""}
    for record in history:
        if record.get("run") != run:
            continue
        upstream = str(record.get("upstream") or "")
        start = _object_at(record, "from")
        end = _object_at(record, "to")
        summary["upstreams"].setdefault(upstream, {
            "from": start.get("label") or "", "from_commit": start.get("commit") or "",
            "to": end.get("label") or "", "to_commit": end.get("commit") or ""})
        summary["patches"].append({"upstream": upstream, "name": record.get("patch") or "",
                                   "action": record.get("action") or record.get("event") or "",
                                   "detail": record.get("detail") or ""})
        if isinstance(record.get("range_diff"), str):
            summary["range_diff"] += record["range_diff"]
    return summary


def load_history(project: Project, *, limit: int | None = HISTORY_ROWS) -> list[dict]:
    """The JSON-lines history of the series (oldest first); unreadable lines are left out."""
    from patchforge.project import read_no_link

    path = Path(getattr(project, "root", ".")) / "series" / "history.jsonl"
    try:
        lines = read_no_link(path).splitlines()
    except (OSError, PatchforgeError):
        return []  # (status says why, naming it)
    records = []
    for line in lines:
        try:
            record = parse_json(line)
        except ValueError:  # (status says which line, and why)
            continue
        if isinstance(record, dict):
            records.append(record)
    return records if limit is None else records[-limit:]


def _read_json(path: Path):
    try:
        return parse_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def _read_header(project: Project, patch: dict) -> dict:
    """Header fields, subject and description of a patch file still in the series; {} otherwise
    (the series may have moved on since the status document was made)."""
    try:
        parsed = project.read_patch(patch["upstream"], patch["name"])
    except Exception:  # a report never fails over one unreadable patch
        return {}
    fields = {}
    for name in HEADER_FIELDS:
        values = parsed.get_all(name)
        if values:
            fields[name] = "\n".join(values)
    diff = parsed.diff.decode("utf-8", "replace")
    return {"subject": parsed.subject, "fields": fields, "description": parsed.description_text,
            "diff": diff, "standing": parsed.standing}


def _project_name(project: Project) -> str:
    root = getattr(project, "root", None)
    return Path(root).name if root else "project"


def _version() -> str:
    return __version__


# --- sections ---------------------------------------------------------------------------------

def _target_line(targets: dict) -> str:
    parts = []
    for name, t in sorted(targets.items()):
        if not isinstance(t, dict):
            continue
        label = t.get("label") or _short(t.get("commit"))
        moved = t.get("base") and t.get("commit") and t["base"] != t["commit"]
        parts.append(f"{name} {label}" + (f" (series based on {_short(t['base'])})" if moved
                                          else ""))
    return "judged against: " + ", ".join(parts) if parts else "no targets"


def _state_cards(patches: list[dict]) -> str:
    counts: dict[str, int] = {}
    for p in patches:
        counts[str(p.get("state"))] = counts.get(str(p.get("state")), 0) + 1
    order = [s for s in STATE_ORDER if s in counts] + sorted(s for s in counts
                                                             if s not in STATE_ORDER)
    cards = [f"<div class=\"card\"><div class=\"n\">{len(patches)}</div>"
             "<div class=\"l\">patches</div></div>"]
    for state in order:
        cards.append(f"<div class=\"card\"><div class=\"n\">{counts[state]}</div>"
                     f"<div class=\"l\">{_badge(state)}</div></div>")
    return "<div class=\"cards\">" + "".join(cards) + "</div>\n"


def _targets_table(targets: dict) -> str:
    if not targets:
        return ""
    rows = []
    for name, t in sorted(targets.items()):
        if not isinstance(t, dict):
            continue
        same = t.get("base") == t.get("commit")
        rows.append(f"<tr><td><b>{_e(name)}</b></td><td class=\"mono\">{_e(_short(t.get('base')))}"
                    f"</td><td>{_e(t.get('label') or '')}</td><td class=\"mono\">"
                    f"{_e(_short(t.get('commit')))}</td><td>{_e(t.get('version') or '')}</td>"
                    f"<td>{'the pinned base' if same else 'a newer target'}</td></tr>")
    return ("<h2>Targets</h2>\n<table><tr><th>upstream</th><th>series base</th><th>target</th>"
            "<th>target commit</th><th>version</th><th></th></tr>" + "".join(rows) + "</table>\n")


def _series_tables(patches: list[dict], headers: dict) -> str:
    out = ["<h2>Series</h2>\n"]
    upstreams: dict[str, list[tuple[int, dict]]] = {}
    for index, p in enumerate(patches, 1):
        upstreams.setdefault(str(p.get("upstream")), []).append((index, p))
    for upstream, items in upstreams.items():
        out.append(f"<h3>{_e(upstream)}</h3>\n<table><tr><th>#</th><th>patch</th><th>state</th>"
                   "<th>hunks</th><th>profiles</th><th>upstream status</th>"
                   "<th>landed in</th><th>forwarded</th></tr>")
        for position, (index, p) in enumerate(items, 1):
            header = headers.get((p.get("upstream"), p.get("name"))) or {}
            fields = header.get("fields", {})
            hunks = _object_at(p, "hunks")
            subject = header.get("subject")
            out.append(
                f"<tr><td class=\"num\">{position}</td><td><a href=\"#patch-{index}\">"
                f"<code>{_e(p.get('name'))}</code></a>"
                + (f"<br><span class=\"muted\">{_e(subject)}</span>" if subject else "")
                + f"</td><td>{_state_badge(p)}</td>"
                f"<td class=\"nowrap\">{_hunk_count(hunks)}</td>"
                f"<td>{_e(fields.get('Profiles', 'all'))}</td>"
                f"<td>{_e(header.get('standing') or '')}</td>"
                f"<td class=\"mono\">{_e(_short(p.get('landed_in')) or '')}</td>"
                f"<td>{_forwarded_short(p.get('forwarded'))}</td></tr>")
        out.append("</table>\n")
    return "".join(out) if upstreams else ""


def _patch_section(index: int, p: dict, header: dict | None) -> str:
    header = header or {}
    attn = " attn" if p.get("needs_attention") else ""
    out = [f"<section class=\"patch{attn}\" id=\"patch-{index}\"><div class=\"head\">"
           f"{_state_badge(p)}<h3><code>{_e(p.get('upstream'))}/{_e(p.get('name'))}</code></h3>"]
    if header.get("subject"):
        out.append(f"<span class=\"subject\">{_e(header['subject'])}</span>")
    out.append("</div><div class=\"body\">")
    fields = dict(header.get("fields", {}))
    facts: list[tuple[str, str]] = []
    if p.get("landed_in"):
        facts.append(("Landed in", f"<code>{_e(p['landed_in'])}</code>"))
    if p.get("confidence"):
        facts.append(("Confidence", _e(p["confidence"])))
    dw = p.get("drop_when")
    if isinstance(dw, dict):
        decided = dw.get("true")
        verdict = "true: drop it" if decided is True else \
            "false: keep it" if decided is False else "undecided"
        reason = f" ({dw['reason']})" if dw.get("reason") else ""
        facts.append(("Drop-When", f"<code>{_e(dw.get('condition'))}</code>: "
                                   f"{_e(verdict + reason)}"))
        fields.pop("Drop-When", None)
    fw = p.get("forwarded")
    if isinstance(fw, dict):
        facts.append(("Pull request", _forwarded_long(fw)))
    for name, value in fields.items():
        facts.append((name, _link_or_text(value)))
    if facts:
        out.append("<dl class=\"fields\">" + "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>"
                                                     for k, v in facts) + "</dl>")
    evidence = [e for e in p.get("evidence") or [] if e is not None]
    if evidence:
        out.append("<div><b>Evidence</b></div><ul class=\"evidence\">"
                   + "".join(f"<li>{_e(e)}</li>" for e in evidence) + "</ul>")
    for f in p.get("files") or []:
        if not isinstance(f, dict):
            continue
        path, target = f.get("path"), f.get("target_path")
        name = _e(path) + (f" &rarr; {_e(target)}" if target and target != path else "")
        cells = []
        for h in f.get("hunks") or []:
            if not isinstance(h, dict):
                continue
            forward, landed = h.get("forward"), h.get("landed")
            cls = "landed" if landed else ("failed" if forward == "failed" else
                                           "fuzz" if forward == "fuzz" else "")
            # A landed hunk "fails" forward because it is already there: say only that.
            text = (f"#{h.get('index')} landed ({landed})" if landed
                    else f"#{h.get('index')} {forward or '?'}")
            cells.append(f"<span class=\"hunk {cls}\">{_e(text)}</span>")
        out.append(f"<div class=\"mono\">{name}</div><div class=\"hunks\">{''.join(cells)}</div>")
    if header.get("description"):
        out.append(f"<details><summary>Description</summary><div class=\"desc\">"
                   f"{_e(header['description'])}</div></details>")
    if header.get("diff"):
        diff = header["diff"]
        cut = len(diff) > MAX_DIFF_CHARS
        out.append("<details><summary>Diff</summary>"
                   + _pre_diff(diff[:MAX_DIFF_CHARS])
                   + ("<p class=\"muted\">(cut: the diff is longer)</p>" if cut else "")
                   + "</details>")
    out.append("</div></section>\n")
    return "".join(out)


def _renamed_since_run(history: list[dict]) -> dict[tuple, str]:
    """(upstream, name) -> "upstream/name" the fix has now, for each fix a rebase run recorded
    under another name than its last (renamed since: the ledger's follow_fixes). The last
    rebase's rows keep the names the run gave them, as its range-diff does, and say the
    new one."""
    from patchforge.ledger import follow_fixes

    fixes, names = follow_fixes(history)
    out: dict[tuple, str] = {}
    for fix, record in zip(fixes, history):
        if fix is not None and record.get("run"):
            out[(record["upstream"], record["patch"])] = names[fix]
    return {key: now for key, now in out.items() if now != f"{key[0]}/{key[1]}"}


def _rebase_section(summary: dict | None, renamed: dict[tuple, str] | None = None) -> str:
    if not summary:
        return ""
    out = ["<h2 id=\"last-rebase\">Last rebase</h2>\n"]
    ups = _object_at(summary, "upstreams")
    rows = []
    for name, info in sorted(ups.items()):
        if isinstance(info, dict):
            rows.append(f"<tr><td><b>{_e(name)}</b></td><td>{_e(info.get('from', ''))} "
                        f"<span class=\"mono muted\">{_e(_short(info.get('from_commit')))}</span>"
                        f"</td><td>{_e(info.get('to', ''))} <span class=\"mono muted\">"
                        f"{_e(_short(info.get('to_commit')))}</span></td></tr>")
    if rows:
        out.append("<table><tr><th>upstream</th><th>from</th><th>to</th></tr>" + "".join(rows)
                   + "</table>\n")
    patch_rows = []
    patches = summary.get("patches")
    for p in patches if isinstance(patches, list) else []:
        if isinstance(p, dict):
            upstream, name = _string_at(p, "upstream"), _string_at(p, "name")
            now = (renamed or {}).get((upstream, name))
            patch_rows.append(f"<tr><td><code>{_e(upstream)}/{_e(name)}"
                              "</code>" + (f" (now <code>{_e(now)}</code>)" if now else "")
                              + f"</td><td>{_badge(str(p.get('action', '')))}</td>"
                              f"<td>{_e(p.get('detail', ''))}</td></tr>")
    if patch_rows:
        out.append("<table><tr><th>patch</th><th>result</th><th>detail</th></tr>"
                   + "".join(patch_rows) + "</table>\n")
    range_diff = summary.get("range_diff")
    if isinstance(range_diff, str) and range_diff.strip():
        out.append("<h3>Range-diff of the old series against the new one</h3>\n"
                   + _pre_range_diff(range_diff))
    return "".join(out)


def _history_section(history: list[dict]) -> str:
    """The last HISTORY_ROWS events, newest first, each fix under its last name (the ledger's
    follow_fixes, asked of the whole history: a rename may be older than the rows shown)."""
    if not history:
        return ""
    from patchforge.ledger import RENAMED, follow_fixes

    fixes, names = follow_fixes(history)
    rows = []
    for fix, record in list(zip(fixes, history))[::-1][:HISTORY_ROWS]:
        when = record.get("date") or record.get("time") or record.get("timestamp") or ""
        event = (record.get("event") or record.get("kind") or record.get("type")
                 or record.get("action") or "")
        patch = record.get("patch") or record.get("name") or ""
        if record.get("upstream") and patch:
            patch = f"{record['upstream']}/{patch}"
        detail = _history_detail(record)
        if fix is not None and names[fix] != patch:
            if event != RENAMED:
                detail = f"as {record.get('patch')}" + (f"; {detail}" if detail else "")
            patch = names[fix]
        rows.append(f"<tr><td class=\"mono\">{_e(when)}</td><td>{_e(event)}</td>"
                    f"<td><code>{_e(patch)}</code></td><td>{_e(detail[:400])}</td></tr>")
    return ("<h2>History</h2>\n<table><tr><th>when</th><th>event</th><th>patch</th>"
            "<th>detail</th></tr>" + "".join(rows) + "</table>\n")


def _history_detail(record: dict) -> str:
    """One line for a history event: the ledger's own fields first, anything else after."""
    parts = []
    start = record.get("from") if isinstance(record.get("from"), dict) else None
    end = record.get("to") if isinstance(record.get("to"), dict) else None
    if start or end:
        parts.append(f"{(start or {}).get('label') or '?'} -> {(end or {}).get('label') or '?'}")
    if record.get("detail"):
        parts.append(str(record["detail"]))
    if record.get("landed_in"):
        parts.append(f"landed in {_short(record['landed_in'])}")
    if record.get("renamed_from"):
        parts.append(f"{record['renamed_from']} -> {record.get('patch')}")
    skip = {"v", "date", "time", "timestamp", "event", "kind", "type", "action", "patch", "name",
            "upstream", "summary", "range_diff", "from", "to", "detail", "landed_in", "run",
            "evidence", "destination", "renamed_from", "old_name_kept_in"}
    parts += [f"{k}: {v if isinstance(v, str) else json.dumps(v)}"
              for k, v in record.items() if k not in skip]
    return "; ".join(parts)


# --- small pieces -----------------------------------------------------------------------------

def _e(value) -> str:
    """Escape anything for HTML text or a quoted attribute. Text decoded with surrogateescape
    (non-UTF-8 file names) is shown with replacement characters rather than failing the page."""
    text = "" if value is None else str(value)
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return html.escape(text, quote=True)


def _short(commit) -> str:
    return str(commit)[:12] if commit else ""


def _hunk_count(hunks: dict) -> str:
    total, landed = hunks.get("total"), hunks.get("landed")
    if total is None:
        return ""
    extra = f" <span class=\"muted\">&middot; {_e(landed)} landed</span>" if landed else ""
    return _e(total) + extra


def _badge(state: str) -> str:
    return f"<span class=\"badge {STATE_CLASS.get(state, 'muted')}\">{_e(state)}</span>"


def _state_badge(p: dict) -> str:
    state = str(p.get("state", "?"))
    hunks = _object_at(p, "hunks")
    label = state
    if state == "partial" and hunks:
        label = f"partial {hunks.get('landed')}/{hunks.get('total')}"
    return (f"<span class=\"badge {STATE_CLASS.get(state, 'muted')}\" data-state=\"{_e(state)}\">"
            f"{_e(label)}</span>")


def _safe_url(url) -> str | None:
    url = str(url or "").strip()
    return url if url.startswith(("https://", "http://")) and not any(c.isspace() for c in url) \
        else None


def _link(url: str, text: str | None = None) -> str:
    return f"<a href=\"{_e(url)}\">{_e(text or url)}</a>"


def _link_or_text(value: str) -> str:
    """A header value, with any http(s) URL in it made a link (everything else escaped)."""
    parts = []
    for word in str(value).split(" "):
        head, url, tail = _url_of_word(word)
        if _safe_url(url):
            parts.append(_e(head) + _link(url) + _e(tail))
        else:
            parts.append(_e(word))
    return " ".join(parts).replace("\n", "<br>")


def _url_of_word(word: str) -> tuple[str, str, str]:
    """(what comes before, the URL, what comes after) of one word of a header: the brackets
    written around a URL (`<URL>`, `(URL)`, `(see URL)`) and the punctuation of the sentence
    after it (`URL,`) are not the URL's, while a closing bracket or quote that is
    (`wiki/Foo_(bar)`, `?q=">`) stays in it: a link cut short opens another page than the one
    the header names."""
    lead = len(word) - len(word.lstrip("<(["))
    head, url, tail = word[:lead], word[lead:], ""
    opened = list(head)  # each bracket written before the URL closes once after it
    while url:
        last = url[-1]
        opener = {">": "<", ")": "(", "]": "["}.get(last)
        if last in ",.;:!?":
            pass  # the sentence's
        elif opener is not None and url.count(opener) < url.count(last) and \
                (opener in opened or last != ">"):
            # A bracket opened before the URL (`<URL>`, `(see URL)`); a `>` the URL holds
            # itself (`?q=">`) stays in it.
            if opener in opened:
                opened.remove(opener)
        else:
            break
        url, tail = url[:-1], last + tail
    return head, url, tail


def _forwarded_short(fw) -> str:
    if not isinstance(fw, dict):
        return ""
    url = _safe_url(fw.get("url"))
    label = fw.get("url", "")
    if url and "/pull/" in url:
        label = "#" + url.rstrip("/").rsplit("/", 1)[-1]
    state = ("merged" if fw.get("merged") else fw.get("state")) or ("?" if not fw.get("error")
                                                                    else "unknown")
    link = _link(url, label) if url else _e(label)
    inc = fw.get("included")
    extra = "" if inc is None else (", in target" if inc else ", not in target")
    return f"{link} {_badge(str(state))}{_e(extra)}"


def _forwarded_long(fw: dict) -> str:
    url = _safe_url(fw.get("url"))
    parts = [_link(url) if url else _e(fw.get("url", ""))]
    if fw.get("title"):
        parts.append(f"&ldquo;{_e(fw['title'])}&rdquo;")
    if fw.get("merged"):
        parts.append(_badge("merged"))
    elif fw.get("state"):
        parts.append(_badge(str(fw["state"])))
    if fw.get("merge_commit"):
        parts.append(f"merge commit <code>{_e(_short(fw['merge_commit']))}</code>")
    if fw.get("included") is not None:
        parts.append(_e(("included in the target" if fw["included"] else "not in the target")
                        + (f" ({fw.get('ahead_by')} ahead, {fw.get('behind_by')} behind"
                           + (f", from {fw['source']}" if fw.get("source") else "") + ")"
                           if fw.get("ahead_by") is not None else "")))
    if fw.get("error"):
        parts.append(f"<span class=\"muted\">({_e(fw['error'])})</span>")
    return " ".join(parts)


def _pre_diff(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        if line.startswith(("diff --git", "--- ", "+++ ", "index ", "rename ", "new file",
                            "deleted file", "similarity")):
            cls = "filehdr"
        elif line.startswith("@@"):
            cls = "hunkhdr"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = ""
        lines.append(f"<span class=\"{cls}\">{_e(line)}</span>" if cls else _e(line))
    return "<pre>" + "\n".join(lines) + "</pre>"


def _pre_range_diff(text: str) -> str:
    """git range-diff output: pair lines (`1: abc = 1: def`, `!`, `<`, `>`) and the nested diff
    of a changed pair (indented four spaces) coloured like git colours them."""
    lines = []
    for line in text.splitlines():
        body = line[4:] if line.startswith("    ") else None
        if body is None:
            marker = _pair_marker(line)
            cls = {"=": "same", "!": "changed", "<": "gone", ">": "new"}.get(marker, "")
        elif body.startswith("@@"):
            cls = "hunkhdr"
        elif body.startswith(("+", "++", "-+")) and not body.startswith(("---", "+++")):
            cls = "add" if body.startswith("+") else "del"
        elif body.startswith("-"):
            cls = "del"
        else:
            cls = ""
        lines.append(f"<span class=\"{cls}\">{_e(line)}</span>" if cls else _e(line))
    return "<pre>" + "\n".join(lines) + "</pre>\n"


def _pair_marker(line: str) -> str:
    # "1:  0123abc = 1:  4567def subject" / "-:  ------- > 2:  89abcde subject"
    parts = line.split()
    return parts[2] if len(parts) > 2 and parts[0].endswith(":") else ""
