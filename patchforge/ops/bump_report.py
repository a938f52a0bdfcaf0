"""The Markdown report of a `bump`, rendered from its document: the body of the stack
repository's pull request and what the command prints.

Only the document is read, so the JSON and the Markdown never disagree; nothing here depends on
the time or the machine, so the same run gives the same bytes (tests compare a golden file).
"""
from __future__ import annotations

import shlex

from patchforge.errors import PatchforgeError
from patchforge.formats.markdown import code_fence, literal_span, literal_text
from patchforge.model.words import counted
from patchforge.names import is_forge_repo



def _text(text) -> str:
    """Text from patches, git, a registry's or a forge's answers, placed outside code: shown
    exactly, never rendered (formats.markdown.literal_text). GitHub renders Markdown and raw
    HTML in a pull request's body and a job summary: a `[x](url)` a registry's error quoted
    was a link, `![t](url)` a remote image, a line break and `## x` a heading."""
    return literal_text(text)


def _code(text) -> str:
    """A value (a tag, a digest, a name) as a code span, outside a table."""
    return literal_span(text, cell=False) if text else "-"


def _shown(text) -> str:
    """A value a registry or the stack chose (a tag, a digest, the image's `created`) as a
    table cell that shows it and renders none of it: a code span, its control characters and
    line breaks written visible (`\\x0a`), its pipes escaped (a table ends a cell at one even
    inside code)."""
    return literal_span(text, cell=True) if text else "-"


def _from(pin: dict) -> str:
    """A pin, in a table cell."""
    if pin["label"] == pin["commit"]:
        return _shown(pin["commit"])
    return f"{_shown(pin['label'])} ({_shown(pin['commit'][:12])})"


def title(doc: dict) -> str:
    """The pull request's title: which upstream moves where, and what happened to the fixes."""
    target = doc.get("target") or {}
    if not target:
        return f"Bump {doc['upstream']}: on the newest nightly already"
    where = target.get("tag") or target.get("spec") or "?"
    counts: dict[str, int] = {}
    for fix in doc["fixes"]:
        counts[fix["outcome"]] = counts.get(fix["outcome"], 0) + 1
    parts = []
    if counts.get("dropped"):
        parts.append(f"{counts['dropped']} landed")
    if counts.get("skipped"):
        parts.append(f"{counts['skipped']} set aside")
    if counts.get("conflict"):
        parts.append(f"{counts['conflict']} in conflict")
    if counts.get("resolved"):
        parts.append(f"{counts['resolved']} resolved by hand")
    return f"Bump {doc['upstream']} to {where}" + (f" ({', '.join(parts)})" if parts else "")


def verdict(doc: dict) -> str:
    """One sentence: did the stack move cleanly, and if not, what the person has to do."""
    outcome = doc["outcome"]
    target = doc.get("target") or {}
    where = target.get("tag") or (target.get("commit") or "")[:12]
    dropped = ((doc.get("rebase") or {}).get("image_unpinned") or {}).get("reference")
    unpinned = "" if not dropped else \
        f" upstream.lock {'will no longer pin' if doc['dry_run'] else 'no longer pins'} the " \
        f"image {_code(dropped)}: see the notes."
    if outcome == "up-to-date":
        # Named with --to (a move finished by hand, proposed now): it is that target.
        return (f"The stack is on {_text(where)} already: nothing to move." if where else
                "The stack is on the newest nightly already: nothing to move.")
    if outcome == "stopped":
        stopped = (doc.get("rebase") or {}).get("stopped") or {}
        command = (f"patchforge bump {shlex.quote(doc['upstream'])} --to "
                   f"{shlex.quote(target.get('spec') or where)} --open-pr")
        return ("**A person is needed.** The rebase stopped: "
                + _text(stopped.get("message", ""))
                + ". Resolve it, then `patchforge rebase --continue` (or `--skip`, `--abort`); "
                f"{_code(command)} then proposes the move as it was finished.")
    if doc["needs_person"]:
        lead = "**A person is needed**" + (" (dry run: nothing was written)"
                                           if doc["dry_run"] else "")
        return lead + ": see the fixes, checks and verification marked below." + unpinned
    if doc["dry_run"]:
        if outcome == "moved":  # a move finished by hand before this look (ops.bump)
            return "Dry run: the stack was moved already, the rebase finished by hand."
        return "Dry run: the stack would move cleanly; nothing was written." + unpinned
    resolved = [fix["name"] for fix in doc["fixes"] if fix["outcome"] == "resolved"]
    if resolved:
        # A stop finished by hand (`rebase --continue`), proposed now: the move was not clean,
        # and the resolution is what the reviewer has to read.
        return ("The stack moved; the rebase was finished by hand: "
                + ", ".join(_code(name) for name in resolved)
                + " resolved by hand (see the range-diff)." + unpinned)
    return "The stack moved cleanly." + unpinned


def render_markdown(doc: dict) -> str:
    if "error" in doc and "fixes" not in doc:
        return _render_error(doc["error"])
    out: list[str] = [f"## {_text(title(doc))}", ""]
    target = doc.get("target")
    if target:
        out += ["| | |", "|---|---|"]
        if target.get("reference"):
            out.append(f"| image | {_shown(target['reference'])} |")
        out += [f"| tag | {_shown(target.get('tag'))} |",
                f"| digest | {_shown(target.get('digest'))} |",
                f"| published | {_shown(target.get('published'))} |",
                f"| {_text(doc['upstream'])} commit | {_shown(target.get('commit'))} |",
                f"| from | {_from(doc['from'])} |"]
        pin = target.get("pin")
        if pin and pin.get("commit") != target.get("commit"):
            # A wheel upstream: the lock pins the wheel the image names, no upstream commit.
            out.append(f"| to | {_from(pin)} |")
        out.append("")
    out += [verdict(doc), ""]
    if doc["fixes"]:
        out += ["### Fixes", "", "| fix | outcome | evidence |", "|---|---|---|"]
        for fix in doc["fixes"]:
            evidence = []
            if fix.get("landed_in"):
                through = f" through {_pull_request(fix['landed_through'])}" \
                    if fix.get("landed_through") else ""
                evidence.append(f"landed in {_shown(fix['landed_in'][:12])}{through}")
            if fix.get("pull_request"):
                evidence.append(_text(fix["pull_request"]["sentence"]))
            evidence += map(_text, fix["evidence"])
            outcome = fix["summary"] + (" ⚠" if fix["needs_person"] else "")
            out.append(f"| {_shown(fix['name'])} | {_text(outcome)} | "
                       f"{'<br>'.join(evidence) or '-'} |")
        out.append("")
    rebase = doc.get("rebase")
    if rebase and rebase.get("range_diff"):
        text = rebase["range_diff"].rstrip("\n")
        fence = code_fence(text)
        out += ["### Range-diff of the series", "", fence, text, fence, ""]
    out += ["### Checks", ""]
    checks = doc["checks"]
    if not checks["ran"]:
        out += [f"Not run: {_text(checks['reason'])}.", ""]
    else:
        broken = checks["invariants"]
        out.append("- `Keeps:` invariants: " + ("all hold" if not broken else
                                                f"{len(broken)} broken ⚠"))
        for violation in broken:
            out.append(f"  - {_text(violation['message'])}")
        if not checks["results"]:
            out.append("- declared checks: none configured")
        for result in checks["results"]:
            where = f" [{result['profile']}]" if result.get("profile") else ""
            files = f" on {_text(', '.join(result['files']))}" if result.get("files") else ""
            mark = "" if result["ok"] else " ⚠"
            out.append(f"- {_text(result['name'])}{_text(where)}: "
                       f"{_text(result['status'])}{files}{mark}")
        out.append("")
    verification = doc.get("verification")
    if verification is not None:
        out += ["### Verification against the image", ""]
        ref = f" ({_code(verification['reference'])})" if verification.get("reference") else ""
        out.append(f"{_text(verification['status'])}{ref}: {_text(verification.get('detail', ''))}"
                   .rstrip(": "))
        for item in verification.get("files", []):
            out.append(f"- {_code(item.get('path'))}: {_text(item.get('status'))}")
        out.append("")
    search = doc.get("search")
    if search:
        listed = (f"{counted(search['listed'], 'tag')} in {_code(search['repository'])}, "
                  f"{search['nightly']} of them nightly; ")
        if search.get("place_known", True):
            listed += (f"{len(search['newer'])} newer than the stack (ordered by the "
                       f"upstream's history), {search['not_newer']} not newer.")
        else:
            # (A wheel pinned by its version: its pin is no commit of the history.)
            listed += (f"{len(search['newer'])} on the upstream's history (ordered by it), "
                       "each a candidate: the stack's place in that history is unknown (its "
                       "pin is no commit of it, and no nightly image is pinned), so none is "
                       "known to be newer or older than the stack.")
        out += ["### How the nightly was chosen", "", listed]
        for skipped in search["skipped"]:
            out.append(f"- skipped {_code(skipped['tag'])}: {_text(skipped['reason'])}")
        out.append("")
    for note in doc.get("notes", []):
        out.append(f"> {_text(note)}")
    if doc.get("notes"):
        out.append("")
    out.append("<sub>Made by `patchforge bump`.</sub>")
    return "\n".join(out) + "\n"


def _pull_request(url: str) -> str:
    """A landing's pull request: a link when it is a pull request's address as patchforge
    makes it (net.forge reads it as one, and its PullRef's html_url is that address, of a
    repository named as a forge names one), else its text, shown as text. An autolink ends
    at `<`, `>`, a space or a control character: a link holds none."""
    from patchforge.net.forge import parse_pr_url

    try:
        ref = parse_pr_url(url)
    except PatchforgeError:
        return _text(url)
    if ref.html_url != url or not is_forge_repo(ref.repo) or not url.isprintable() \
            or {"<", ">", " "} & set(url):
        return _text(url)
    return f"<{url}>"


def _render_error(error: dict) -> str:
    """`bump --json`'s error document (error.schema.json) as the summary's section: the bump
    action renders whatever the run printed, and an error document made it fail with a
    KeyError before it wrote its outputs, the message only in the log."""
    where = f" ({error['file']}" + (f", line {error['line']}" if error.get("line") else "") \
        + ")" if error.get("file") else ""
    out = [f"## Bump failed (exit {error.get('exit_code', 2)})", "",
           _text(error.get("message", "")) + _text(where)]
    if error.get("hint"):
        out += ["", f"hint: {_text(error['hint'])}"]
    return "\n".join(out) + "\n"
