"""What `patchforge status` does once its options are read: by click (`cmd_status`), or for the
command lines `direct` reads without it. Output goes through `output.echo`, which writes what
click.echo writes, so a `status --against SPEC [--json]` never loads click (its import is
12-15 ms of CPU, 2% of a status on the AITER series)."""
from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

from patchforge.cli import target_specs
from patchforge.cli.output import (STATE_COLORS, announce_state_report, echo, emit_json,
                                   gone_line, paint, say_info, say_notes, table)
from patchforge.errors import EXIT_ATTENTION, PatchforgeError

if TYPE_CHECKING:
    from patchforge.project import Project


def departed_fixes(project: Project) -> list[dict]:
    """When and why fixes left the series (the ledger's history), for the status report."""
    from patchforge.ledger import departures, describe_event

    out = []
    try:
        gone = departures(project)
    except PatchforgeError as exc:
        # The history is a record, not an input of status: a broken line is reported (lint
        # fails on it) but does not stop the judgement of the series.
        echo(f"warning: {exc}", err=True)
        return []
    for patch, event in sorted(gone.items()):
        out.append({"patch": patch, "event": str(event.get("event")),
                    "description": describe_event(event)})
    return out


def upstreamed_gone(project: Project, store, targets,
                    unread: list[str] | None = None) -> list:
    """The fixes under upstreamed/ whose change each target's files no longer have, judged at
    the target itself (the pin, or --against's revision): never from what an earlier command
    found at another revision. `unread` gets a `NOT CHECKED: ...` sentence for each fix that
    could not be judged there (its files, or the revision it landed in, not in the cache), and
    one for each the series itself carries (a leftover: leftover_said), which is not returned."""
    kept = [name for name in targets if (project.series_dir(name) / "upstreamed").is_dir()]
    if not kept:
        return []  # nothing kept: the check's module is not even loaded
    from patchforge.reverts import carried_by_series, gone_upstream

    found = []
    for name in kept:
        failed: list[tuple[str, str]] = []
        gone = gone_upstream(project, store, name, targets[name].commit, unread=failed)
        # One the series itself carries at the pin is in the overlays: a leftover (a rebase
        # undone with git leaves its new upstreamed/ file), said, never "in no overlay".
        carried = carried_by_series(project, store, name, gone)
        found += [g for g in gone if g not in carried]
        if unread is not None:
            unread += [leftover_said(project, g) for g in carried]
        if unread is not None:
            unread += [f"NOT CHECKED: whether {name} {targets[name].label} still holds "
                       f"{name}/upstreamed/{fix}: {' '.join(why.split())}"
                       for fix, why in failed]
    return found


def unparsed_upstreamed(project: Project, targets) -> list[dict[str, str]]:
    """The fixes kept under upstreamed/ of the targets' upstreams that do not parse
    (reverts.unparsed_said), without loading the module when nothing is kept."""
    kept = [name for name in targets if (project.series_dir(name) / "upstreamed").is_dir()]
    if not kept:
        return []
    from patchforge.reverts import unparsed_said

    return unparsed_said(project, kept)


def leftover_said(project: Project, gone) -> str:
    """What status says of a kept fix the series itself carries (reverts.carried_by_series)."""
    pin = project.lock.pin(gone.upstream)
    return (f"{gone.path} is a leftover: the series carries its change at the pin "
            f"({pin.label}), so the overlays have it; `patchforge delete "
            f"{gone.upstream}/upstreamed/{gone.name}` takes the file out (kept under deleted/)")


def run_status(app, *, specs: tuple[str, ...], more_specs: tuple[str, ...], strict: bool,
               as_json: bool, html_out: str | None = None, output_format: str = "text") -> None:
    """`status [--against SPEC]... [SPEC]... [--strict] [--json] [--html FILE] [--format F]`."""
    from patchforge.net import make_forge
    from patchforge.pins import open_store
    from patchforge.forwarded import ask_forge_ahead
    from patchforge.ops.status import (bring_targets, resolve_targets, series_status,
                                       targets_ahead)
    from patchforge.state import unlisted_fixes
    from patchforge.targets import parse_target_specs

    if html_out == "-":
        from patchforge.errors import UsageError

        # (`export --mbox -` is the mbox alone; here stdout already carries the table or the
        # JSON document. It wrote a file named `-`.)
        raise UsageError("`--html -`: status prints its own answer on standard output; "
                         "nothing was written",
                         hint="name a file (`--html report.html`), or `--html /dev/stdout` "
                              "for the report followed by the table")
    specs = target_specs("--against", specs, more_specs)
    project = app.project()
    wanted = parse_target_specs(specs, project.upstream_names()) if specs else None
    forge = make_forge(project)
    with open_store(project) as store:
        # The pins a fresh cache lacks fetched, the targets resolved and the forge asked about
        # the submitted fixes first: no rebase's write-out waits on the network with this
        # command.
        resolved = bring_targets(project, store, wanted)
        asked = ask_forge_ahead(project, store, forge, targets_ahead(project, resolved))
        # Read whole: a rebase writing out its result is waited for (it replaces several
        # files); the pins are checked again on the lock read whole.
        with app.reading():
            notes, busy, skipped = announce_state_report(project, as_json=as_json)
            targets = resolve_targets(project, store, wanted, resolved=resolved)
            # The table shows a patch's first line of evidence: a patch a gone file makes
            # obsolete is not judged hunk by hunk for it (the document and the other formats
            # show every hunk).
            results = series_status(project, store, targets, forge=forge, lookups=asked,
                                    every_hunk=as_json or bool(html_out)
                                    or output_format != "text")
            document: dict[str, Any] = {
                "targets": {name: {"base": t.base_commit, "commit": t.commit, "label": t.label,
                                   "version": t.version} for name, t in targets.items()},
                "patches": [r.to_json() for r in results],
                "needs_attention": any(r.attention for r in results),
                "departed": departed_fixes(project),
                "notes": notes,
                "skipped": [{"upstream": fix.upstream, "name": fix.name,
                             "path": fix.path.relative_to(project.root).as_posix()}
                            for fix in skipped],
                # A patch file its series does not list is in no overlay: "all apply" would
                # hide it.
                "unlisted": [{"upstream": upstream, "name": name,
                              "path": path.relative_to(project.root).as_posix()}
                             for upstream, name, path in unlisted_fixes(project)],
            }
        # Fixes under upstreamed/ whose change the target no longer has: `reverted` (proven),
        # `gone_upstream` (taken out otherwise, or a target from before the landing). Each
        # needs attention, whoever took the change out: the fix is in no overlay and the
        # target runs the code it was written against (reverts.LandingGone). Judged after the
        # read lock: a file of a kept fix the store lacks is fetched here, and no rebase's
        # write-out waits for that.
        unread: list[str] = []
        gone = upstreamed_gone(project, store, targets, unread)
        document["notes"] += unread
        say_notes(unread, as_json=as_json)
        document["reverted"] = [g.to_json() for g in gone if g.reverted]
        document["gone_upstream"] = [g.to_json() for g in gone if not g.reverted]
        # A kept fix that does not parse is judged by nothing: whether the target still has
        # its change is not known, and a CI gate that went green on it could lose the fix
        # unsaid. It needs attention until it is restored or deleted.
        document["unparsed"] = unparsed_upstreamed(project, targets)
    busy = busy or bool(document["unlisted"]) or bool(gone) or bool(document["unparsed"])
    # The exit status is this too (1), with --strict also a patch that applies only with fuzz.
    document["needs_attention"] = document["needs_attention"] or busy
    if html_out:
        from patchforge.report import write_html_report
        write_html_report(project, html_out, document)
    if as_json:
        emit_json(document, "status")
    else:
        for name, t in targets.items():
            moved = "" if t.base_commit == t.commit else f" (series based on {t.base_commit[:12]})"
            echo(f"{name}: target {t.label} {t.commit[:12]}{moved}")
        rows = []
        for r in results:
            state = r.state + (f" {r.hunks_landed}/{r.hunks_total}" if r.state == "partial" else "")
            if r.confidence and r.state == "upstreamed":
                state += f" ({r.confidence})"
            notes = []
            if r.landed_in:
                notes.append(f"landed in {r.landed_in[:12]}")
            if r.forwarded:
                fw = r.forwarded
                if "merged" in fw:
                    pr = "merged" if fw["merged"] else fw.get("state", "?")
                    inc = fw.get("included")
                    extra = "" if inc is None else (
                        f", in target ({fw.get('ahead_by')} ahead, {fw.get('behind_by')} behind)"
                        if inc else ", not in target")
                    notes.append(f"PR {pr}{extra}")
                elif fw.get("error"):
                    notes.append(f"PR: {_shortened(_forge_error(fw['error']), 80)}")
            if r.drop_when and r.drop_when.get("true"):
                notes.append(f"Drop-When {r.drop_when['condition']} is true")
            elif r.drop_when and r.drop_when.get("true") is None and r.drop_when.get("reason"):
                # Never a silent "applies" over a condition nobody could look at.
                notes.append(f"Drop-When {r.drop_when['condition']} cannot be evaluated: "
                             f"{r.drop_when['reason']}")
            followed = r.state == "applies" and any(
                f["target_path"] not in (None, f["path"]) for f in r.files)
            if r.evidence and (r.state not in ("applies",) or followed or r.attention
                               and not (r.drop_when and r.drop_when.get("true"))):
                # (A patch that applies and still needs attention says why: a Profiles
                # field naming no configured profile. One that applies to a file upstream
                # renamed says so, as the rebase does: its paths, overlay and mount move.)
                # Cut to the table's width on a terminal only, at a word's end and marked:
                # a log or a pipe gets it whole.
                # A fix landed in part names every hunk that landed (each its own item):
                # the first alone left the others' landing unsaid.
                shown = r.evidence if r.state == "partial" else r.evidence[:1]
                notes += [_shortened(item, 90) if sys.stdout.isatty() else item
                          for item in shown]
            elif r.state == "conflict":
                notes += _failing_hunks(r.files)
            rows.append([f"{r.upstream}/{r.name}", state, "; ".join(notes)])
        echo(table(rows, ["patch", "state", "evidence"],
                   colors={1: lambda c: STATE_COLORS.get(c.split(" ")[0])},
                   enabled=app.color))
        for departed in document["departed"]:
            echo(f"left the series: {departed['patch']}: {departed['description']}")
        for fix in document["skipped"]:
            echo(paint(f"skipped (needs attention): {fix['upstream']}/{fix['name']}",
                       "yellow", app.color))
        for fix in document["reverted"]:
            echo(paint(f"reverted upstream (needs attention): {fix['message']}", "yellow",
                       app.color))
        for fix in document["gone_upstream"]:
            echo(gone_line(fix, app.color))
        for fix in document["unparsed"]:
            from patchforge.reverts import unparsed_line

            echo(paint(unparsed_line(fix, attention=True), "yellow", app.color))
        configured = set(project.upstream_names())
        from patchforge.ops.series import cut_short_words

        for fix in document["unlisted"]:
            if fix["upstream"] not in configured:
                echo(paint(f"not in any series (needs attention): {fix['path']}: "
                           f"{fix['upstream']!r} is no configured upstream; configure it "
                           f"again, or move series/{fix['upstream']}/ away", "yellow",
                           app.color))
                continue
            if "/" in fix["name"] or not fix["name"].endswith(".patch"):
                # A series line names only NAME.patch beside it (extra.diff, X.PATCH, a
                # subdirectory's patch): listing it as it is names another file.
                echo(paint(f"not in the series (needs attention): {fix['path']}: a series line "
                           f"names only NAME.patch in series/{fix['upstream']}/; rename it so "
                           f"and list it in series/{fix['upstream']}/series, or move it to "
                           f"series/{fix['upstream']}/deleted/", "yellow", app.color))
                continue
            left = cut_short_words(project, fix["upstream"], fix["name"])
            echo(paint(f"not in the series (needs attention): {fix['path']}: " + (
                left or f"list it in series/{fix['upstream']}/series, or move it to "
                        f"series/{fix['upstream']}/deleted/"), "yellow", app.color))
        # Everything the document's needs_attention counts, each once: the patches, the fixes
        # set aside in skipped/, the patch files no series lists and the landings taken back.
        attention = sum(1 for r in results if r.attention) + len(document["skipped"]) + \
            len(document["unlisted"]) + len(document["reverted"]) + \
            len(document["gone_upstream"]) + len(document["unparsed"])
        from patchforge.report import all_apply, need_attention

        if attention:
            echo(paint(need_attention(attention), "yellow", app.color))
        elif busy:  # a rebase stopped or in progress: the note above says where it stands
            echo(paint(f"{all_apply(len(results))} at the pin, but the project needs "
                       "attention (see the note above)", "yellow", app.color))
        else:
            echo(f"{all_apply(len(results), still_needed=True)}{_empty_said(results)}")
            if not results:  # (nothing is wrong: no line under -q)
                say_info("hint: `patchforge new NAME --file PATH` starts a fix; `patchforge "
                         "import quilt|mbox|git|overlay` brings fixes made elsewhere")
        # At its own pin a patch conflicts only after a hand edit (of the patch file, of the
        # pin, or of a patch before it): the table names the failing hunks, lint says more.
        at_pin = {name for name, t in targets.items() if t.base_commit == t.commit}
        if any(r.state == "conflict" and r.upstream in at_pin for r in results):
            echo("hint: `patchforge lint` says why a patch does not apply at its pin (the "
                 "failing hunks; a patch file saved with CRLF line ends); `patchforge edit "
                 "NAME` opens it on the series before it, to make its change again",
                 err=True)
        # Against a new target, what the states mean for the series is what a rebase does:
        # say how to see that, and how to make the move.
        if any(r.attention and r.upstream not in at_pin for r in results):
            import shlex

            to = " ".join(shlex.quote(spec) for spec in specs)
            echo(f"hint: `patchforge rebase --to {to} --dry-run` shows what a rebase onto "
                 "the target does with each patch (drop, move or stop); without "
                 "`--dry-run` it moves the series", err=True)
    if output_format == "github":
        _github(project, targets, results,
                [*document["reverted"], *document["gone_upstream"], *document["unparsed"]])
    if document["needs_attention"] or (strict and any(r.state in STRICT_STATES
                                                      for r in results)):
        sys.exit(EXIT_ATTENTION)


# Warnings that `--strict` makes errors: a patch that applies only with fuzz, and one without
# a diff (which applies because it changes nothing; lint's `empty` warning).
STRICT_STATES = ("fuzz", "empty")


def _empty_said(results) -> str:
    """The summary's words for the warnings among the patches that apply: those without a
    diff ("all 3 apply" over a fix whose diff a merge lost read as the fix deployed) and those
    that apply only with fuzz (a warning, an error under --strict)."""
    fuzz = sum(1 for r in results if r.state == "fuzz")
    empty = sum(1 for r in results if r.state == "empty")
    said = [f"{fuzz} {'applies' if fuzz == 1 else 'apply'} only with fuzz"] if fuzz else []
    if empty:
        said.append(f"{empty} {'is' if empty == 1 else 'are'} empty (no diff, so no change)")
    return f", but {' and '.join(said)}" if said else ""


def _forge_error(error: str) -> str:
    """A forge error without its `pull request OWNER/REPO#N: ` prefix: the row is that pull
    request's already, and the room left is for what the forge answered."""
    return re.sub(r"^pull request \S+#\d+: ", "", error)


def _shortened(text: str, width: int) -> str:
    """`text` cut to `width` at a word's end, marked `…` (a cut in `answered 401` read as
    `answered 4`)."""
    if len(text) <= width:
        return text
    return text[:width].rsplit(" ", 1)[0] + " …"


def _failing_hunks(files: list[dict]) -> list[str]:
    """Where a conflicting patch fails, per file: `hunks 2, 4-7 of 7 fail in PATH` (the
    table's evidence, which the judge leaves empty for a conflict)."""
    out = []
    for entry in files:
        hunks = entry.get("hunks") or []
        failed = [h["index"] for h in hunks if h.get("forward") == "failed"]
        if not failed:
            continue
        runs: list[list[int]] = []
        for index in failed:
            if runs and index == runs[-1][-1] + 1:
                runs[-1].append(index)
            else:
                runs.append([index])
        numbers = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
        which = f"hunk {numbers} of {len(hunks)} fails" if len(failed) == 1 else \
            f"hunks {numbers} of {len(hunks)} fail"
        out.append(f"{which} in {entry.get('target_path') or entry['path']}")
    return out


def _github(project: Project, targets, results, taken_back: list[dict]) -> None:
    """The step summary and annotations; `taken_back`: the fixes kept under upstreamed/ whose
    landing the target took back (each needs attention: in no overlay), and those that do not
    parse (judged by nothing)."""
    from patchforge.cli import github

    items = [("error", fix["message"], fix["path"], f"patchforge status: {fix['path']}")
             for fix in taken_back]
    for r in results:
        if not r.attention and r.state != "fuzz":
            continue
        level = "error" if r.state in ("conflict", "obsolete") else "warning"
        evidence = "; ".join(r.evidence[:2] or _failing_hunks(r.files)[:2])
        items.append((level, f"{r.state}" + (f": {evidence}" if evidence else ""),
                      github.patch_file(project, f"{r.upstream}/{r.name}"),
                      f"patchforge status: {r.upstream}/{r.name}"))
    github.emit_annotations(project, items)
    against = ", ".join(f"{name} {t.label} ({t.commit[:12]})" for name, t in targets.items())
    from patchforge.report import all_apply, need_attention

    attention = sum(1 for r in results if r.attention) + len(taken_back)
    verdict = need_attention(attention) if attention else \
        f"{all_apply(len(results), still_needed=True)}{_empty_said(results)}"
    if taken_back:
        verdict += "".join(f"\n\n- {github.markdown_cell(fix['message'])}"
                           for fix in taken_back)
    rows = [[f"{r.upstream}/{r.name}", r.state + (" (needs attention)" if r.attention else ""),
             _shortened((r.evidence or _failing_hunks(r.files) or [""])[0], 120)]
            for r in results]
    github.append_summary(project, f"### patchforge status against {against}: {verdict}\n\n"
                          + github.markdown_table(["patch", "state", "evidence"], rows))
