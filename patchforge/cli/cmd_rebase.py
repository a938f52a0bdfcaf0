"""`rebase --to SPEC [--dry-run]`, `rebase --continue | --skip | --abort`: the click command
(its options and help); what it does is `rebasing.run_rebase`, which `direct` also runs."""
from __future__ import annotations

import click

from patchforge.cli.complete import complete_spec
from patchforge.cli.rebasing import run_rebase


@click.command()
@click.option("--to", "specs", multiple=True, metavar="SPEC", shell_complete=complete_spec,
              help="The new upstream revision (vllm=SPEC aiter=SPEC, or one SPEC).")
@click.option("--dry-run", is_flag=True, help="Show what would happen; write nothing.")
@click.option("--continue", "cont", is_flag=True, help="Go on after fixing a conflict.")
@click.option("--skip", is_flag=True, help="Set the stopped patch aside and go on.")
@click.option("--abort", is_flag=True, help="Put everything back as it was.")
@click.option("--allow-undo", is_flag=True,
              help="With --continue: take the resolution even where it undoes a change made "
                   "under the patch (the new upstream's, or an earlier patch's).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.argument("more_specs", nargs=-1, metavar="[SPEC]...", shell_complete=complete_spec)
@click.pass_obj
def rebase(app, specs, dry_run, cont, skip, abort, allow_undo, as_json, more_specs):
    """Move the series onto a new upstream revision.

    `--to vllm=SPEC aiter=SPEC` moves several upstreams in one run; an upstream not named stays
    where it is. SPEC is a release (0.33.0), a commit, tag or branch, a ROCm nightly tag
    (nightly-<sha>), a version with a +g<sha> part, or an image reference (pinned by digest).
    Fixes that landed upstream move to series/<upstream>/upstreamed/; nothing in the project
    changes until the whole run succeeds (try --dry-run first).

    A conflict stops the rebase, exit 3, with the file in .patchforge/work/<upstream>: fix it
    there, then --continue; or --skip (the patch is kept in skipped/), or --abort. A move that
    finishes with a fix in skipped/ (this one's or an earlier rebase's, in none of the overlays
    it writes) names it and exits 1."""
    run_rebase(app, specs=specs, more_specs=more_specs, dry_run=dry_run, cont=cont, skip=skip,
               abort=abort, allow_undo=allow_undo, as_json=as_json)
