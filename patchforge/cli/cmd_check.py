"""`check` (Keeps: invariants, and with --run the configured checks) and `ledger`."""
from __future__ import annotations

import sys

import click

from patchforge.cli.complete import complete_profile
from patchforge.cli.output import announce_state_report, emit_json, say_info, table
from patchforge.errors import EXIT_ATTENTION, UsageError

CHECK_COLORS = {"passed": "green", "skipped": "cyan", "failed": "red", "timeout": "red",
                "error": "red"}


@click.command()
@click.option("--run", "run", is_flag=True,
              help="Also run the checks declared in the configuration ([tool.patchforge.checks]).")
@click.option("--profile", metavar="P", shell_complete=complete_profile, help="Only this profile.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def check(app, run, profile, as_json):
    """Check every patch's Keeps: invariants on each profile's result; with --run, run the
    configured checks on a tree of the profile's overlays. Nothing from a patch is ever run."""
    from patchforge.checks import load_checks, run_checks
    from patchforge.invariants import check_overlay_invariants
    from patchforge.pins import ensure_pinned, open_store
    from patchforge.overlay import build_overlays

    project = app.project()
    if profile is not None and profile not in project.config.profiles:
        raise UsageError(f"unknown profile {profile!r} (configured: "
                         f"{', '.join(project.config.profiles) or 'none'})")
    specs = load_checks(project) if run else []  # a bad configuration: before any work
    with app.reading():
        from patchforge.ops.series import refuse_unlisted_fixes

        # Before the pins are fetched: the invariants and checks would hold on overlays made
        # without a fix the series dropped by hand, and a CI job gated on them go green.
        refuse_unlisted_fixes(project)
    with open_store(project) as store:
        # The pins fetched first (a fresh clone's first run waits on the network: no rebase's
        # write-out waits with it), then checked again on the lock read whole.
        for name, pin in project.lock.upstreams.items():
            ensure_pinned(project, store, name, pin)
        # The project read whole (never a rebase's half-written result); the checks then run
        # on the overlays in memory, however long they take, without holding anyone back.
        with app.reading():
            notes, attention, _ = announce_state_report(project, as_json=as_json)
            for name, pin in project.lock.upstreams.items():
                ensure_pinned(project, store, name, pin)
            overlays = build_overlays(project, store)
            from patchforge.landings import gone_where_nothing_mounts

            not_judged: list[str] = []
            unmounted_gone = gone_where_nothing_mounts(project, store, not_judged)
            # A fix kept as landed that does not parse is judged by nothing: whether the pin
            # still has its change is not known.
            from patchforge.reverts import unparsed_line, unparsed_said

            unparsed = [unparsed_line(said)
                        for said in unparsed_said(project, project.lock.upstreams)]
            violations = [v for v in check_overlay_invariants(project, overlays, store=store)
                          if profile is None or v.profile in (profile, None)]
            stale = _not_the_series(project, overlays, profile)
        results = run_checks(project, store, overlays, profile=profile) if run else []
    failed = [r for r in results if not r.ok]
    # A fix in no overlay: set aside under skipped/ (or a rebase stopped or in progress, the
    # series then not the one to deploy), or kept as landed while upstream took it out again at
    # the pin. Its Keeps lines are checked nowhere, and the overlays checked lack it: a CI job
    # that runs `check` went green on them, as `status`, `lint` and `overlays --check` do not.
    lacking = [why for profile_, (_, _, whys) in sorted(overlays.landed.items(),
                                                        key=lambda item: item[0] or "")
               if profile is None or profile_ in (profile, None) for why in whys] \
        + unmounted_gone + unparsed + stale
    ok = not violations and not failed and not attention and not lacking
    if as_json:
        emit_json({"ok": ok, "ran": run,
                   "invariants": [v.to_json() for v in violations],
                   "checks": [r.to_json() for r in results],
                   **({"notes": notes + not_judged + lacking}
                      if attention or lacking or not_judged else {})}, "check")
    else:
        for warning in overlays.warnings + unparsed + stale:
            click.echo(f"warning: {warning}", err=True)
        for note in not_judged:
            # (As `status` notes it: whether the pin still has the fix is not known; the
            # exit status is unchanged, as verify's.)
            say_info(note)
        for gone in unmounted_gone:
            # (No overlay of its upstream is mounted, so no Dockerfile warning above names it.)
            click.echo(f"warning: the pin lacks a fix kept as landed: {gone}", err=True)
        if violations:
            from patchforge.model.words import counted

            click.echo(f"{counted(len(violations), 'Keeps invariant')} broken:")
            for v in violations:
                click.echo(f"  {v.message}")
        else:
            click.echo("Keeps invariants: all hold")
        if attention or lacking:
            click.echo("...on overlays that lack a fix or are not the series to deploy (see the "
                       "notes and warnings above): needs attention")
        if run:
            _render_results(results, specs, profile, app)
    if not ok:
        sys.exit(EXIT_ATTENTION)


def _not_the_series(project, overlays, profile) -> list[str]:
    """What says that overlays/, where the stack makes them (a SHA256SUMS there), is not what
    the series makes: the invariants and checks ran on the series' overlays, built here, and a
    deployment has the ones on disk. A fix deleted, refreshed or added since `overlays` ran
    was deployed (or not) while check said all was well. Empty when they agree; with
    `profile`, that profile's files only."""
    from patchforge.model.words import counted
    from patchforge.overlay import check_overlays

    if not (project.overlays_dir / "SHA256SUMS").exists():
        return []
    configured = set(project.config.profiles)
    drifts = [d for d in check_overlays(project, overlays)
              if profile is None or d.path.split("/", 1)[0] not in configured - {profile}]
    if not drifts:
        return []
    return [f"overlays/ is not what the series makes ({counted(len(drifts), 'file')} differ"
            + ("s" if len(drifts) == 1 else "") + ": `patchforge overlays --check` lists them): "
            "checked on the series' overlays, which no deployment has until `patchforge "
            "overlays` writes them"]


def _render_results(results, specs, profile, app) -> None:
    if not results:
        if specs:  # declared, but each for other profiles than the one asked for
            click.echo(f"no declared check runs on profile {profile} ("
                       + ", ".join(f"{s.name}: {', '.join(s.profiles)}" for s in specs) + ")")
        else:
            click.echo("no checks configured ([tool.patchforge.checks.NAME] with "
                       "command = [...])")
        return
    rows = [[r.status, r.name, r.profile or "-",
             r.files[0] if len(r.files) == 1 else f"{len(r.files)} files" if r.files else "-",
             r.detail] for r in results]
    click.echo(table(rows, ["status", "check", "profile", "files", "detail"],
                     colors={0: lambda c: CHECK_COLORS.get(c)}, enabled=app.color))
    for r in results:
        if r.ok:
            continue
        click.echo(f"\n--- {r.name}" + (f" [{r.profile}]" if r.profile else "")
                   + f": {' '.join(r.command)}")
        if r.patches:
            click.echo(f"patches that touched {', '.join(r.files)}: {', '.join(r.patches)}")
        if r.output_tail:
            click.echo(r.output_tail)
    passed = sum(1 for r in results if r.status == "passed")
    failed = sum(1 for r in results if not r.ok)
    click.echo(f"\n{passed} passed, {failed} failed"
               + (f", {len(results) - passed - failed} skipped"
                  if len(results) - passed - failed else ""))


@click.command()
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 if series/PATCHES.md is stale, or missing once the "
                   "stack keeps a history.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def ledger(app, check_only, as_json):
    """Regenerate series/PATCHES.md from the series, upstream.lock and series/history.jsonl."""
    from patchforge.fsutil import RepoLock
    from patchforge.ledger import ledger_findings, ledger_path, write_ledger
    from patchforge.state import refuse_beside_cut_short_write_out, require

    project = app.project()
    rel = str(ledger_path(project).relative_to(project.root))
    if check_only:
        findings = ledger_findings(project)
        # Read-only: says a stop or an edit (in the document, under --json).
        notes = announce_state_report(project, as_json=as_json)[0]
        if as_json:
            emit_json({"path": rel, "ok": not findings, "changed": False,
                       "findings": [f.to_json() for f in findings],
                       **({"notes": notes} if notes else {})}, "ledger")
        else:
            for f in findings:
                click.echo(f"{rel}: {f.message}")
            if not findings and not ledger_path(project).exists():
                # A stack with no history yet keeps none (lint says nothing of it either):
                # "up to date" would vouch for a file that is not there.
                click.echo(f"{rel}: none kept yet (the first `patchforge rebase`, or "
                           "`patchforge ledger`, writes it)")
            elif not findings:
                click.echo(f"{rel} is up to date")
        if findings:
            sys.exit(EXIT_ATTENTION)
        return
    with RepoLock(project.state_dir, wait=30):
        # A rebase stopped or in progress writes the ledger of its new series when it ends
        # (and one cut short while writing out its result rewrites PATCHES.md whole when it is
        # finished or undone): the ledger of the series it is leaving, written now, would be
        # committed as the move's. Refused, as `overlays` is (state.COMMANDS); asked under
        # the lock, so that a rebase stopping meanwhile is seen. A write-out cut short first:
        # its message names the journal and both ways on.
        refuse_beside_cut_short_write_out(project, "ledger")
        require(project, "ledger", project.upstream_names())
        changed = write_ledger(project)
    notes = announce_state_report(project, as_json=as_json)[0]
    if as_json:
        emit_json({"path": rel, "ok": True, "changed": changed, "findings": [],
                   **({"notes": notes} if notes else {})}, "ledger")
    else:
        click.echo(f"wrote {rel}" if changed else f"{rel} is up to date")
