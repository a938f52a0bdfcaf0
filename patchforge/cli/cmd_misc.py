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

    comp_cls = {"fish": fish_completion, "zsh": zsh_completion}.get(
        shell, lambda: get_completion_class(shell))()
    if comp_cls is None:  # click without this shell: say so rather than print nothing
        raise click.UsageError(f"this click has no completion support for {shell}")
    try:
        source = comp_cls(cli, {}, "patchforge", COMPLETE_VAR).source()
    except RuntimeError as exc:  # click refuses bash older than 4.4
        raise click.UsageError(str(exc)) from None
    if shell == "bash":
        source = _bash_no_space_after_equals(source)
    if shell == "zsh":
        source = _zsh_with_compinit(_zsh_no_space_after_equals(source))
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


# zsh alike: click's script hands each plain value to `compadd`, which types a space after it.
# A value ending in `=` is added on its own with no suffix (`compadd -S ''`).
_ZSH_PLAIN = '                completions+=("$key")\n'
_ZSH_ADDED = ("    if [ -n \"$completions\" ]; then\n"
              "        compadd -U -V unsorted -a completions\n"
              "    fi\n")


def _zsh_no_space_after_equals(source: str) -> str:
    if _ZSH_PLAIN not in source or _ZSH_ADDED not in source:  # another click's script
        return source
    source = source.replace(_ZSH_PLAIN, (
        '                if [[ "$key" == *= ]]; then\n'
        '                    completions_to_go_on+=("$key")\n'
        '                else\n'
        '    ' + _ZSH_PLAIN +
        '                fi\n'), 1)
    return source.replace(_ZSH_ADDED, _ZSH_ADDED + (
        "\n    if [ -n \"$completions_to_go_on\" ]; then\n"
        "        compadd -U -V unsorted -S '' -a completions_to_go_on\n"
        "    fi\n"), 1).replace("    local -a completions\n",
                             "    local -a completions\n    local -a completions_to_go_on\n", 1)


# `compdef` comes with zsh's completion system (compinit): the line the help gives, in a
# ~/.zshrc without compinit (zsh's own default has none), said "command not found: compdef" at
# every start and completed nothing. The script loads it where it is not loaded yet (`-i`:
# without asking about directories others can write, whose files it then leaves out).
_ZSH_COMPDEF = "    compdef _patchforge_completion patchforge\n"


def _zsh_with_compinit(source: str) -> str:
    if _ZSH_COMPDEF not in source:  # another click's script: as it is
        return source
    return source.replace(_ZSH_COMPDEF, "    (( $+functions[compdef] )) || "
                                        "{ autoload -Uz compinit && compinit -i }\n"
                          + _ZSH_COMPDEF, 1)


# fish: click's own script (click 8.4) splits its answer's lines into words, so that every
# completion failed with fish's errors (`string split: missing argument`) and none was
# offered. patchforge's answer and script for fish are its own: one line per completion,
# `TYPE,VALUE` and a tab and the help where there is one, which fish's `complete` reads as
# value and description (a patch name or an upstream holds no tab or newline; a help's
# newline is made a space). fish itself types no space after a value ending in `=`.
_FISH_SOURCE = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \\
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split -m 1 , -- $completion);

        if test "$metadata[1]" = dir;
            __fish_complete_directories $metadata[2];
        else if test "$metadata[1]" = file;
            __fish_complete_path $metadata[2];
        else if test "$metadata[1]" = plain;
            printf '%%s\\n' $metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments "(%(complete_func)s)";
"""


def fish_completion():
    """The completion class for fish (`_FISH_SOURCE` says why it is patchforge's own),
    registered with click for the answer too (`_PATCHFORGE_COMPLETE=fish_complete`)."""
    from click.shell_completion import FishComplete, add_completion_class

    class PatchforgeFish(FishComplete):
        source_template = _FISH_SOURCE

        def get_completions(self, args, incomplete):
            return _option_joined(super().get_completions(args, incomplete), incomplete)

        def format_completion(self, item) -> str:
            line = f"{item.type},{item.value}"
            if item.help:
                line += "\t" + " ".join(str(item.help).split())
            return line.replace("\n", " ")

    add_completion_class(PatchforgeFish, "fish")
    return PatchforgeFish


def zsh_completion():
    """The completion class for zsh: click's, answering `--against=vl` with the whole word
    (_option_joined), registered with click for the answer too."""
    from click.shell_completion import ZshComplete, add_completion_class

    class PatchforgeZsh(ZshComplete):
        def get_completions(self, args, incomplete):
            return _option_joined(super().get_completions(args, incomplete), incomplete)

    add_completion_class(PatchforgeZsh, "zsh")
    return PatchforgeZsh


def _option_joined(items, incomplete: str):
    """The values completing `--against=vl`, each as the word zsh and fish put in its place.
    click splits an option's `--name=value` word and answers the value alone (`vllm=`): bash
    breaks its words at `=` and completes the part after it, but zsh's `compadd -U` replaced
    the whole word with it (the line became `patchforge status vllm=`, the option gone), and
    fish, matching each answer against the word, offered none. A file or directory answer is
    left to the shell's own path completion."""
    if not (incomplete.startswith("-") and "=" in incomplete):
        return items
    from click.shell_completion import CompletionItem

    option = incomplete.partition("=")[0]
    return [CompletionItem(f"{option}={item.value}", type=item.type, help=item.help)
            if item.type == "plain" else item for item in items]


def _complete_command(ctx, param, incomplete):
    """`help WORD...`: the commands (the subcommands of the group the words so far name), as
    the same words complete after `patchforge` itself."""
    from click.shell_completion import CompletionItem

    group: click.Command | None = ctx.find_root().command
    for word in ctx.params.get("words") or ():
        group = group.get_command(ctx, word) if isinstance(group, click.Group) else None
    if not isinstance(group, click.Group):
        return []
    found = ((name, group.get_command(ctx, name)) for name in group.list_commands(ctx)
             if name.startswith(incomplete))
    return [CompletionItem(name) for name, command in found
            if command is not None and not command.hidden]


@click.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...", shell_complete=_complete_command)
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
