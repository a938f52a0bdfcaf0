"""`completion`: print the shell completion script for bash, zsh or fish.

The script is click's own (the `_PATCHFORGE_COMPLETE=<shell>_source patchforge` protocol), so what
the shell asks at completion time is answered by the same command table as `--help`, lazily.
"""
from __future__ import annotations

import click
from patchforge.cli import cli

COMPLETE_VAR = "_PATCHFORGE_COMPLETE"
SHELLS = ("bash", "zsh", "fish")



@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell):
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash:  eval "$(patchforge completion bash)"   (in ~/.bashrc)
    zsh:   eval "$(patchforge completion zsh)"    (in ~/.zshrc)
    fish:  patchforge completion fish > ~/.config/fish/completions/patchforge.fish
    """
    from click.shell_completion import get_completion_class

    comp_cls = get_completion_class(shell)
    if comp_cls is None:  # click without this shell: say so rather than print nothing
        raise click.UsageError(f"this click has no completion support for {shell}")
    try:
        source = comp_cls(cli, {}, "patchforge", COMPLETE_VAR).source()
    except RuntimeError as exc:  # click refuses bash older than 4.4
        raise click.UsageError(str(exc)) from None
    click.echo(source)
