"""`completion`: print the shell completion script for bash, zsh or fish. `help [COMMAND]`.

The script is click's own (the `_PATCHFORGE_COMPLETE=<shell>_source patchforge` protocol), so what
the shell asks at completion time is answered by the same command table as `--help`, lazily.
"""
from __future__ import annotations

import click
from patchforge.cli.app import cli

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
    if shell == "bash":
        source = _bash_no_space_after_equals(source)
    click.echo(source)


# click's bash loop adds each plain value to COMPREPLY, and bash then types a space after a
# single match: `--against vl<TAB>` gave `vllm= `, and the SPEC typed next became an argument
# of its own (`--against vllm= 0.33.0`). A value ending in `=` (an `UPSTREAM=` to go on
# typing) is left without the space, as `compopt -o nospace` says.
_PLAIN = "            COMPREPLY+=($value)\n"


def _bash_no_space_after_equals(source: str) -> str:
    if _PLAIN not in source:  # another click's script: as it is
        return source
    return source.replace(_PLAIN, _PLAIN + "            if [[ $value == *= ]]; then compopt -o nospace; fi\n",
                          1)


@click.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_(ctx, words):
    """The help of COMMAND, as `patchforge COMMAND --help` gives it (`patchforge help rebase`,
    `patchforge help import overlay`); without one, patchforge's own."""
    current = ctx.find_root()
    for word in words:
        group = current.command
        found = group.get_command(current, word) if isinstance(group, click.Group) else None
        if found is None:
            raise click.UsageError(f"no command {' '.join([*current.command_path.split()[1:], word])!r}"
                                   "; `patchforge --help` lists them")
        current = click.Context(found, info_name=word, parent=current)
    click.echo(current.get_help(), color=ctx.color)
