"""The click command group: `patchforge --help`, the global options, and each command's module
loaded when it runs (`LAZY_COMMANDS`). Every command line but the few `cli.direct` reads
without click goes through here."""
from __future__ import annotations

import importlib
from pathlib import Path

import click

from patchforge import __version__
from patchforge.cli import LAZY_COMMANDS, configure


# quilt's and StGit's verbs that patchforge has no command of that name for, with what does
# the job here (the tables of docs/coming-from.md). A verb that is a patchforge command too
# (`new`, `refresh`, `delete`, `rename`, `edit`) is not listed.
PEER_VERBS = {
    "push": "nothing is applied to a checkout; `patchforge edit NAME` opens the upstream's files "
            "with the series applied through NAME, `patchforge status` says whether each applies",
    "pop": "nothing is applied to a checkout; `patchforge edit --close` ends an edit",
    "goto": "`patchforge edit NAME` opens the upstream's files with the series applied through "
            "NAME",
    "series": "`patchforge list` lists the series",
    "applied": "`patchforge list` lists the series",
    "unapplied": "`patchforge list` lists the series",
    "next": "`patchforge list` lists the series in order (nothing is applied: no patch is next)",
    "previous": "`patchforge list` lists the series in order (nothing is applied: no patch is "
                "previous)",
    "prev": "`patchforge list` lists the series in order (nothing is applied: no patch is "
            "previous)",
    "top": "`patchforge show NAME` shows a patch; `patchforge status` says what is being edited",
    "diff": "`patchforge show NAME` shows a patch",
    "files": "`patchforge show NAME` lists the files a patch touches",
    "remove": "`patchforge delete NAME` takes a patch out of the series",
    "float": "`patchforge move NAME --after X` (or `--first`) reorders the series",
    "sink": "`patchforge move NAME --first` (or `--after X`) reorders the series",
    "pull": "`patchforge rebase --to SPEC` moves the series to a new upstream revision",
    "mail": "`patchforge pr NAME` drafts an upstream pull request",
    "header": "the header is the top of the .patch file: edit it there",
    "undo": "`patchforge rebase --abort` puts the series back as it was before a rebase; the "
            "project is a git repository, where git takes back any other change",
    "reset": "`patchforge rebase --abort` puts the series back as it was before a rebase; the "
             "project is a git repository, where git takes back any other change",
    "uncommit": "`patchforge import git RANGE --repo DIR` makes a patch of each commit",
}


class GivenPath(click.Path):
    """A file or directory option that refuses an empty word. click reads `--html ""` as the
    path "", which is the current directory once opened: `status --html "$REPORT"` with the
    variable unset wrote no report and said nothing, `export --mbox ""` failed on a rename over
    ".", and `init ""` made a project where `init` without a DIRECTORY refuses to."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == "":
            kind = "directory" if not self.file_okay else "file" if not self.dir_okay \
                else "path"
            self.fail(f"an empty {kind} name (an unset shell variable?): name the {kind}",
                      param, ctx)
        return super().convert(value, param, ctx)

class HelpGroup(click.Group):
    """A group that, named without a command (`patchforge`, `patchforge import`), prints its help
    on stdout and exits 0, as `quilt` and `stg` do: asking what there is to run is not an error.
    click's own answer changed between versions (help on stdout and 0 before 8.2, on stderr and
    2 since), so it is made here once for every version."""

    def parse_args(self, ctx, args):
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        if not ctx.resilient_parsing:
            self._answer_a_command_spelled_as_an_option(ctx, args)
        return super().parse_args(ctx, args)

    def _answer_a_command_spelled_as_an_option(self, ctx, args):
        # `export --quilt DIR` takes its form as an option, `import quilt DIR` as a command: the
        # import typed the export's way (`import --quilt DIR --update`) is answered with the
        # line that runs, not click's bare "No such option".
        own = {opt for param in self.get_params(ctx) for opt in param.opts + param.secondary_opts}
        for index, arg in enumerate(args):
            if arg == "--" or not arg.startswith("-") or arg.partition("=")[0] in own:
                return
            name, eq, value = arg[2:].partition("=")
            if not arg.startswith("--") or self.get_command(ctx, name) is None:
                continue
            import shlex

            rest = args[:index] + ([value] if eq else []) + args[index + 1:]
            line = " ".join([ctx.command_path, name] + [shlex.quote(a) for a in rest])
            ctx.fail(f"No such option {arg.partition('=')[0]!r}: {name!r} is a command of "
                     f"`{ctx.command_path}`: `{line}`")

    def resolve_command(self, ctx, args):
        # A mistyped command (`patchforge rebse`) is answered with the closest names, as click
        # answers a mistyped option; click's own answer names none.
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None \
                and not ctx.resilient_parsing:
            import difflib

            if name in PEER_VERBS and ctx.parent is None:  # not `upstream remove`
                ctx.fail(f"No such command {name!r}: {PEER_VERBS[name]} (docs/coming-from.md "
                         "maps quilt, StGit and git rebase to patchforge)")
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean "
                         + " or ".join(repr(c) for c in close) + "?")
        return super().resolve_command(ctx, args)


class LazyGroup(HelpGroup):
    def list_commands(self, ctx):
        return list(LAZY_COMMANDS)

    def get_command(self, ctx, name):
        entry = LAZY_COMMANDS.get(name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        return getattr(module, entry[1])

    def format_commands(self, ctx, formatter):
        # Short help from the table, so `--help` imports no command module.
        rows = [(name, help_text) for name, (_, _, help_text) in LAZY_COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Exit codes: 0 done, 1 something needs attention, 2 bad usage or input (the "
                    "message names the file and line), 3 a rebase stopped on a conflict, 70 an "
                    "internal error, 75 a registry, forge or git remote gave no answer (run it "
                    "again later), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). "
                    "`patchforge COMMAND --help` gives a command's options.")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path),
              help="The project directory (default: the nearest one with a configuration).")
@click.option("--offline", is_flag=True, help="Use only the local cache; no network.")
@click.option("-v", "--verbose", count=True, help="More output (-vv: debug).")
@click.option("-q", "--quiet", count=True, help="Less output.")
@click.option("--no-color", is_flag=True, help="No colour (NO_COLOR is honoured too).")
@click.version_option(__version__, prog_name="patchforge")
@click.pass_context
def cli(ctx, root, offline, verbose, quiet, no_color):
    """patchforge: carry local fixes against pinned upstreams as a patch series."""
    ctx.obj = configure(root=root, offline=offline, verbose=verbose, quiet=quiet,
                        no_color=no_color)
