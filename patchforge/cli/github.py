"""`--format github`: findings as GitHub Actions annotations, and a Markdown summary of the run.

Annotations are workflow commands on stdout (`::error file=F,line=N,title=T::message`), which the
runner turns into marks on the pull request's files; their values are escaped as the runner's
own toolkit escapes them (% CR LF, and `:` `,` in properties). The summary is appended to the file
`$GITHUB_STEP_SUMMARY` names, when it is set (on a runner it always is): each command adds its
own section, so a job that runs lint, overlays --check and status shows all three. A path among
the project's own files (a patch, the lock) is refused as every other output path is, and so
is another name of one of them (a hard link): appending writes into the file in place.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from patchforge.formats.markdown import literal_text

if TYPE_CHECKING:
    from patchforge.project import Project

FORMATS = ("text", "github")
format_option = click.option(
    "--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
    help="github: also print GitHub Actions annotations and append a Markdown summary to "
         "$GITHUB_STEP_SUMMARY.")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, file: str | None = None, line: int | None = None,
               title: str | None = None) -> str:
    """One workflow command: level is error, warning or notice."""
    props = []
    if file:
        props.append(f"file={_escape_property(file)}")
        if line:
            props.append(f"line={int(line)}")
    if title:
        props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(message)}" if props \
        else f"::{level}::{_escape_data(message)}"


def emit_annotations(project: Project, items: list[tuple[str, str, str | None, str]]) -> None:
    """(level, message, file, title) each as an annotation on stdout; `file` is a path from the
    project's root, written from the repository's root, as the runner places annotations."""
    prefix = _project_in_repository(project)
    for level, message, file, title in items:
        click.echo(annotation(level, message, file=f"{prefix}{file}" if file else None,
                              title=title))


def _project_in_repository(project: Project) -> str:
    """The project's root from the root of the git repository holding it ("" when they are
    one, or no repository holds it), with a trailing slash. A stack in a subdirectory (the
    action's `working-directory`) had every annotation on a file the pull request does not
    have (`series/up/f1.patch` for `stack/series/up/f1.patch`), so none showed."""
    root = os.path.abspath(project.root)
    here = root
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            relative = os.path.relpath(root, here)
            return "" if relative == "." else relative.replace(os.sep, "/") + "/"
        parent = os.path.dirname(here)
        if parent == here:
            return ""
        here = parent


def markdown_cell(text: str) -> str:
    """`text` as one cell of a summary table (or one line of a list), shown as written and
    obeyed nowhere: findings quote what patches hold (header values, names) and what others
    said, and GitHub renders the summary's Markdown and raw HTML, so escaping `<` alone left
    `[x](url)` a link and `![t](url)` a remote image. One escaper with bump's report
    (literal_text, which escapes the cell's `|` too); a line break is a space, the cell one
    line."""
    return literal_text(str(text).replace("\r\n", " ").replace("\n", " "))


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def append_summary(project: Project, markdown: str) -> bool:
    """Append a section to $GITHUB_STEP_SUMMARY (appending is how the runner collects it: every
    step and every command adds to the same file). False when the variable is not set.

    The variable names any file: one of the project's own (a workflow that points it at a
    file it commits, a typo) is refused as `status --html` refuses it
    (Project.refuse_own_destination), exit 2 after the findings are printed, never appended
    to: Markdown appended to upstream.lock or a patch left every later command failing on it.
    Another name of one of those files (a hard link) is refused alike: the opened file is
    compared with the project's (Project.own_file_of) before anything is appended."""
    from patchforge.errors import UsageError

    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    try:
        # A missing directory is left to the append below, which names the variable too.
        project.refuse_own_destination(path, new_directory=True)
    except UsageError as exc:
        raise UsageError(f"GITHUB_STEP_SUMMARY={exc.message}; nothing was appended, the "
                         "findings above were printed",
                         hint="point GITHUB_STEP_SUMMARY at a file outside series/, "
                              "overlays/ and .patchforge/ (the runner sets it), or unset it "
                              "to print no summary") from None
    try:
        with open(path, "a", encoding="utf-8") as out:
            # The same file under another name (a hard link to upstream.lock) passed the
            # comparison of paths above: the opened file itself is compared with the
            # project's, before a byte is appended.
            owned = project.own_file_of(os.fstat(out.fileno()))
            if owned is None:
                out.write(markdown.rstrip("\n") + "\n\n")
    except OSError as exc:
        # A path the runner did not make (a directory, a missing one, set by hand): the
        # machine's bare "Is a directory: PATH" and "run the command again" pointed nowhere.
        raise UsageError(f"GITHUB_STEP_SUMMARY={path}: cannot append the summary there "
                         f"({exc.strerror or exc}); the findings above were printed",
                         hint="point GITHUB_STEP_SUMMARY at a file you can write (the runner "
                              "sets it), or unset it to print no summary") from None
    if owned is not None:
        raise UsageError(f"GITHUB_STEP_SUMMARY={path} is the project's own "
                         f"{os.path.relpath(owned, project.root)} under another name (a hard "
                         "link), never written by this command; nothing was appended, the "
                         "findings above were printed",
                         hint="point GITHUB_STEP_SUMMARY at a file of its own outside series/, "
                              "overlays/ and .patchforge/ (the runner sets it), or unset it "
                              "to print no summary")
    return True


def patch_file(project: Project, label: str) -> str | None:
    """`upstream/name.patch` (a finding's label) -> its path from the project root, when it is
    a patch of the series; a label that is already a project file is returned as it is."""
    upstream, sep, name = label.partition("/")
    if sep and name.endswith(".patch") and upstream in project.upstream_names():
        return str(project.patch_path(upstream, name).relative_to(project.root))
    return label if (project.root / label).exists() else None
