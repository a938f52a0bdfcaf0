"""`lint`: run the checks of `patchforge.ops.lint` and print their findings (exit 1 on an error)."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from patchforge.cli import github
from patchforge.cli.github import format_option
from patchforge.cli.output import emit_json, say_notes, table
from patchforge.errors import EXIT_ATTENTION
from patchforge.model.words import counted

if TYPE_CHECKING:
    from patchforge.project import Project


@click.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON document (schema: "
                   "patchforge/formats/schemas/lint.schema.json).")
@click.option("--no-forge", is_flag=True, help="Do not ask the forge about submitted fixes.")
@click.option("--warnings-fail", is_flag=True, help="Exit 1 on warnings too.")
@format_option
@click.pass_obj
def lint(app, as_json, no_forge, warnings_fail, output_format):
    """Headers, series consistency, byte-stability, fuzz, invariants, stale submissions."""
    from patchforge.forwarded import ask_forge_ahead
    from patchforge.judge import Target
    from patchforge.net import make_forge
    from patchforge.ops.lint import lint as do_lint
    from patchforge.pins import ensure_pinned, open_store
    from patchforge.state import state_report

    project = app.project()

    def bring_pins(store) -> None:
        for name, pin in project.lock.upstreams.items():
            if name in project.config.upstreams:  # else a finding of do_lint's
                ensure_pinned(project, store, name, pin)

    forge = None if no_forge else make_forge(project)
    with open_store(project) as store:
        # The pins fetched and the forge asked about the submitted fixes first (a fresh
        # clone's first run, a slow forge: no rebase's write-out waits on the network with
        # this command), then the pins checked again on the lock read whole.
        bring_pins(store)
        asked = ask_forge_ahead(project, store, forge, {
            name: Target(name, pin.commit, pin.commit, pin.label, pin.version)
            for name, pin in project.lock.upstreams.items() if name in project.config.upstreams})
        # Read whole (never a rebase's half-written result), then printed once the read lock
        # is let go: a pager or a pipe left unread holds back no rebase's write-out.
        with app.reading():
            notes, busy, _ = state_report(project)
            bring_pins(store)
            findings = do_lint(project, store, forge=forge, lookups=asked)
    say_notes(notes, as_json=as_json)
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    failing = errors or (warnings_fail and warnings) or busy
    if as_json:
        # What makes it exit 1 beside its findings (a rebase stopped or in progress, a fix
        # set aside), said in the document: under --json stderr does not say it.
        emit_json({"ok": not failing, "errors": errors, "warnings": warnings,
                   "findings": [f.to_json() for f in findings],
                   **({"notes": notes} if busy else {})}, "lint")
    elif findings:
        click.echo(table([[f.severity, f.patch, f.check, f.message] for f in findings],
                         ["severity", "patch", "check", "message"]))
        click.echo(f"lint: {counted(errors, 'error')}, {counted(warnings, 'warning')}")
    else:
        click.echo("lint: no findings")
    if output_format == "github":
        _github(project, findings, errors, warnings)
    if failing:
        sys.exit(EXIT_ATTENTION)


def _github(project: Project, findings, errors: int, warnings: int) -> None:
    github.emit_annotations(project, [(f.severity, f"{f.check}: {f.message}",
                              github.patch_file(project, f.patch), f"patchforge lint: {f.patch}")
                             for f in findings])
    verdict = "no findings" if not findings else \
        f"{counted(errors, 'error')}, {counted(warnings, 'warning')}"
    section = f"### patchforge lint: {verdict}\n"
    if findings:
        section += "\n" + github.markdown_table(
            ["severity", "patch", "check", "message"],
            [[f.severity, f.patch, f.check, f.message] for f in findings])
    github.append_summary(project, section)
