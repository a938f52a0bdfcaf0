"""`status [--against SPEC]...`: the click command (its options and help); what it does is
`statusing.run_status`, which `direct` also runs."""
from __future__ import annotations

import click

from patchforge.cli.app import GivenPath
from patchforge.cli.complete import complete_spec
from patchforge.cli.github import format_option
from patchforge.cli.statusing import run_status


@click.command()
@click.option("--against", "specs", multiple=True, metavar="SPEC", shell_complete=complete_spec,
              help="Judge against this target instead of the pin (vllm=SPEC aiter=SPEC, or "
                   "one SPEC: a release, commit, tag, nightly-<sha>, +g<sha> version or "
                   "image).")
@click.option("--strict", is_flag=True,
              help="Treat fuzz, and a patch without a diff (empty), as an error.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--html", "html_out", type=GivenPath(dir_okay=False), metavar="FILE",
              help="Also write a self-contained HTML report.")
@click.argument("more_specs", nargs=-1, metavar="[SPEC]...", shell_complete=complete_spec)
@format_option
@click.pass_obj
def status(app, specs, strict, as_json, html_out, more_specs, output_format):
    """Per patch: applies, offset, fuzz, merges, conflict, upstreamed, partial, obsolete,
    unsure or empty, with the evidence and where it landed."""
    run_status(app, specs=specs, more_specs=more_specs, strict=strict, as_json=as_json,
               html_out=html_out, output_format=output_format)
