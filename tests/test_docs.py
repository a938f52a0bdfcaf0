"""The documentation as a user meets it: every install instruction installs this project, and
every fenced shell command of the tutorial, the reference and the example-stack page runs as
written on a fresh clone, exiting as the page says and printing the output the page shows."""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from helpers.env import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
        REPO_ROOT / ".pre-commit-hooks.yaml"]


def test_every_pip_install_names_this_project():
    """`pip install patchforge` installs an unrelated project of that name from the package
    index; every instruction must install this repository (a path or a git URL) under our own
    distribution name."""
    name = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert name != "patchforge"
    seen = 0
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in re.finditer(r"pip install\s+(?:-\S+\s+)*(\S+(?: @ \S+)?)", line):
                target = match.group(1).strip("`'\"")
                seen += 1
                assert target.startswith((".", "/", f"{name} @ git+")), \
                    f"{path.name}:{number}: {line.strip()}"
    assert seen >= 3


def test_every_configuration_key_is_in_the_reference():
    """docs/reference.md's configuration table names every key the schema accepts."""
    import json

    schema = json.loads((REPO_ROOT / "patchforge/formats/schemas/config.schema.json").read_text())
    keys = [*schema["properties"],
            *(f"forge.{key}" for key in schema["properties"]["forge"]["properties"]),
            *(f"upstreams.<name>.{key}" for key in schema["$defs"]["upstream"]["properties"])]
    table = [line.split(" | ")[0].removeprefix("| ") for line in
             (REPO_ROOT / "docs/reference.md").read_text().splitlines() if line.startswith("| `")]
    documented = {key for cell in table for key in re.findall(r"`([^`]+)`", cell)}
    missing = [key for key in keys if key not in documented
               and not any(d.startswith(f"{key}.") for d in documented)]
    assert not missing, f"docs/reference.md's configuration table lacks {missing}"



def test_every_option_a_page_gives_a_command_is_one_it_has():
    """docs/ci.md showed the action's quoting with `pr --title ""`: `pr` has no `--title`, and
    the line, copied into a workflow, stops with "No such option". Each command a page writes in
    backticks (`patchforge [OPTIONS] COMMAND ...`, or `COMMAND ...` alone) gives only options
    that command, or patchforge itself, has."""
    import click

    from patchforge.cli.app import cli

    ctx = click.Context(cli)
    commands: dict[str, click.Command] = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        commands[name] = command
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                commands[f"{name} {sub}"] = command.get_command(ctx, sub)
    own = {opt for param in cli.params for opt in [*param.opts, *param.secondary_opts]}
    wrong, seen = [], 0
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for fragment in re.findall(r"`([^`]+)`", line):
                words = fragment.split()
                if words[:1] == ["patchforge"]:
                    words = words[1:]
                    while words and words[0].startswith("-"):
                        words = words[1:]
                elif words[:1] == ["rm"]:  # the shell's `rm -rf`, not the command's
                    continue
                if not words or words[0] not in commands:
                    continue
                key = " ".join(words[:2]) if " ".join(words[:2]) in commands else words[0]
                command = commands[key]
                if isinstance(command, click.Group):
                    continue
                has = own | {opt for param in command.params
                             for opt in [*param.opts, *param.secondary_opts]}
                seen += 1
                for word in words[1:]:
                    if word in ("&&", "||", ";", "|"):
                        break
                    if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", word) \
                            and word.split("=")[0] not in has:
                        wrong.append(f"{page.name}:{number}: `{fragment}`: {key} has no {word}")
    assert seen > 1000, seen
    assert not wrong, "options no command of that name has:\n" + "\n".join(wrong)


def test_every_command_whose_document_says_dry_run_takes_dry_run():
    """`pr NAME` is a dry run unless `--push`/`--open` (its document's `dry_run`, its last line
    "dry run: nothing left this machine"), yet `pr NAME --dry-run`, typed as `rebase` and `bump`
    take it, stopped with "No such option". Each command whose JSON document says whether it
    was a dry run (`dry_run` in its schema) takes `--dry-run`, and docs/reference.md's row of
    the command gives it."""
    import json

    import click

    from patchforge.cli.app import cli

    ctx = click.Context(cli)
    rows = [line for line in (REPO_ROOT / "docs/reference.md").read_text().splitlines()
            if line.startswith("| `")]
    missing, seen = [], 0
    for schema in sorted((REPO_ROOT / "patchforge/formats/schemas").glob("*.schema.json")):
        if '"dry_run"' not in json.dumps(json.loads(schema.read_text())):
            continue
        name = schema.name.removesuffix(".schema.json")
        command = cli.get_command(ctx, name)
        assert command is not None, schema.name
        seen += 1
        if "--dry-run" not in {opt for param in command.params for opt in param.opts}:
            missing.append(f"`{name}` has no --dry-run")
        if not any(row.startswith(f"| `{name} ") and "[--dry-run]" in row.split(" | ")[0]
                   for row in rows):
            missing.append(f"docs/reference.md's `{name}` row does not give [--dry-run]")
    assert seen >= 3, seen
    assert not missing, missing


def test_every_history_event_has_a_row_in_the_ledgers_table():
    """docs/invariants.md's table of `series/history.jsonl` events ("the rest depends on the
    event") listed five events; `rename` writes `renamed` and `bring-back` writes
    `brought-back` there too, and a reader of the history met two events the page did not
    give. Every event the reference lists, each one the ledger writes, has its row."""
    from patchforge import ledger

    reference = (REPO_ROOT / "docs/reference.md").read_text()
    listed = reference[reference.index('`{"v": 1, "time": …, "event": '):]
    listed = listed[:listed.index('"upstream": …')]
    events = set(re.findall(r'"([a-z-]+)"', listed)) - {"v", "time", "event"}
    written = {*ledger._REBASE_EVENTS.values(), *ledger.DEPARTURE_EVENTS, ledger.RENAMED,
               ledger.BROUGHT_BACK, "submitted"}
    assert written <= events, written - events
    table = (REPO_ROOT / "docs/invariants.md").read_text()
    rows = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.M))
    assert events <= rows, f"docs/invariants.md's history table lacks {sorted(events - rows)}"

# The programs any system with a shell has (POSIX utilities and coreutils), and the ones the
# README names as what patchforge needs. Any other program a page runs must be named on that
# page with where it comes from.
BASE_PROGRAMS = {"cat", "cd", "cmp", "cp", "echo", "grep", "head", "mkdir", "mktemp", "sed",
                 "sha256sum", "tail", "git", "python3", "patchforge", "export"}
_SHELL_SEPARATORS = {";", "|", "&&", "||", "(", ")", "{", "}", "do", "then", "else", "!", "&"}


def programs_run(command: str) -> list[str]:
    """The programs a shell command line starts (the first word of each simple command)."""
    import shlex

    lexer = shlex.shlex(command.replace("\\\n", " ").replace("\n", " ; "), posix=True,
                        punctuation_chars=True)
    lexer.whitespace_split = True
    found, start = [], True
    for token in lexer:
        if token in _SHELL_SEPARATORS or set(token) <= set(";|&()"):
            start = True
        elif start and token in ("for", "while", "if", "in", "done", "fi"):
            start = token in ("while", "if", "done", "fi")
        elif start and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", token):
            found.append(token)
            start = False
    return found


def test_every_program_a_page_runs_is_there_or_said_where_it_comes_from():
    """The tutorial's step 5 ran `unzip` without a word that it must be installed, and a
    minimal Debian or a container image has none: the reader met "unzip: command not found".
    Every program a page's commands start is on every system, or named in the README's
    requirements, or named on the page with how to install it."""
    assert programs_run("for s in a b; do\n  unzip -q x 'y/*' -d $s; done") == ["unzip"]
    assert programs_run("X=1 cd /tmp && (cd o && sha256sum -c S | tail -3)") == \
        ["cd", "cd", "sha256sum", "tail"]
    missing = []
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        for command in doc_commands(page):
            for program in set(programs_run(command.text)) - BASE_PROGRAMS:
                said = re.search(rf"(apt-get install|install it)[^\n]*\b{re.escape(program)}\b"
                                 rf"|\b{re.escape(program)}\b[^\n]*\binstall", text)
                if not said:
                    missing.append(f"{command.doc}:{command.line}: {program}")
    assert not missing, f"programs run without a word on where they come from: {missing}"



# What the README's test command may take for granted: the README's requirements (git, quilt,
# GNU patch), patchforge itself, and the programs of every Debian or Ubuntu system (its
# Essential packages: coreutils, diffutils, tar, sed, util-linux, a shell).
TEST_PROGRAMS = {"git", "quilt", "patch", "patchforge", "bash", "sh", "cat", "cp", "rm", "sed",
                 "sha256sum", "diff", "tar", "unshare"}


def test_every_program_the_tests_run_is_named_in_the_readme_or_skipped_without():
    """The README's test command on a machine without `unzip` (a minimal Debian, the python
    image) failed a wheel-import test with "No such file or directory: 'unzip'": the README
    names quilt and GNU patch as what the tests need, nothing else. A test that starts any
    other program skips where it is not installed, naming how to install it (`need_tool`)."""
    readme = (REPO_ROOT / "README.md").read_text()
    assert "apt-get install quilt patch" in readme
    started = re.compile(r"subprocess\.(?:run|Popen|check_output|check_call)\(\s*\[\s*\"([\w.-]+)\"")
    missing, seen = [], 0
    for path in sorted((REPO_ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        for match in started.finditer(text):
            seen += 1
            program = match.group(1)
            if program in TEST_PROGRAMS:
                continue
            if f'need_tool("{program}")' not in text and f'which("{program}")' not in text:
                line = text.count("\n", 0, match.start()) + 1
                missing.append(f"{path.relative_to(REPO_ROOT)}:{line}: {program}")
    assert seen > 100, seen
    assert not missing, f"programs a test runs without skipping where they are missing: {missing}"

# --------------------------------------------------------------------------------------------
# Every fenced shell command of the documentation, run as written, in order, on a fresh clone.

RUN_DOCS = ["docs/tutorial.md", "docs/reference.md", "docs/example-stack.md"]
SHELL_BLOCKS = ("console", "sh", "shell", "bash")
# Commands that cannot run here, each with its reason (matched by prefix, after substitution).
# Empty: the released wheels the pages name are brought into the machine's cache first (from the
# package index, once per machine), a pull request is drafted from a local mirror, and nothing
# else leaves the machine.
SKIP: dict[str, str] = {}


@dataclass
class DocCommand:
    doc: str
    line: int
    text: str
    shown: list[str]  # the output the page shows under it


def doc_commands(path: Path) -> list[DocCommand]:
    """The commands of a page's console blocks (`$ ` prompts, `> ` and trailing-backslash
    continuations, the output below each) and sh/bash blocks (every non-comment line)."""
    commands: list[DocCommand] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if not fence or fence.group(1) not in SHELL_BLOCKS:
            if fence:  # another kind of block: skip to its end
                i += 1
                while i < len(lines) and not lines[i].strip().startswith("```"):
                    i += 1
            i += 1
            continue
        console = fence.group(1) == "console"
        i += 1
        current: DocCommand | None = None
        while i < len(lines) and not lines[i].strip().startswith("```"):
            line = lines[i]
            starts = line.startswith("$ ") if console else (line.strip() and
                                                            not line.lstrip().startswith("#"))
            if starts:
                text = line[2:] if console else line
                number = i + 1
                while text.endswith("\\") or (console and i + 1 < len(lines)
                                              and lines[i + 1].startswith("> ")):
                    i += 1
                    text += "\n" + (lines[i][2:] if lines[i].startswith("> ") else lines[i])
                current = DocCommand(str(path.relative_to(REPO_ROOT)), number, text, [])
                commands.append(current)
            elif current is not None and console:
                current.shown.append(line)
            i += 1
        i += 1
    return commands


def shown_but_not_printed(shown: list[str], output: str) -> list[str]:
    """The lines a page shows under a command that the command did not print, in order.

    Each shown line must be one line of the output, in the page's order; lines in between may be
    left out. A `…` in a shown line stands for text trimmed there (any characters, within the
    line); a line that is only `…` stands for lines left out. Column alignment is not compared
    (a run of spaces is two spaces): a table's widths follow the paths of the machine it ran on."""
    def columns(line: str) -> str:
        return re.sub(r"  +", "  ", line.rstrip())

    printed = [columns(line) for line in output.splitlines()]
    missing = []
    position = 0
    for line in shown:
        line = columns(line)
        if line.strip() in ("", "…"):
            continue
        pattern = re.compile(".*".join(re.escape(piece) for piece in line.split("…")))
        found = next((i for i in range(position, len(printed)) if pattern.fullmatch(printed[i])),
                     None)
        if found is None:
            missing.append(line)
        else:
            position = found + 1
    return missing


def test_shown_output_is_matched_line_by_line():
    output = "a  b\nskipped\nlong line with detail\nlast\n"
    assert shown_but_not_printed(["a  b", "…", "long …detail", "last"], output) == []
    assert shown_but_not_printed(["last", "a  b"], output) == ["a  b"]  # order matters
    assert shown_but_not_printed(["a b"], output) == ["a b"]  # so does a column break
    assert shown_but_not_printed(["a      b"], output) == []  # not the column's width
    assert shown_but_not_printed(["long line"], output) == ["long line"]  # whole lines


def test_doc_commands_are_found():
    commands = doc_commands(REPO_ROOT / "docs/tutorial.md")
    assert len(commands) > 40
    texts = [c.text for c in commands]
    assert "patchforge rebase --continue" in texts
    multi = [c for c in commands if c.text.startswith("patchforge import overlay")]
    assert multi and "--name dsv4-indexer-k-cache-fnuz-fp8" in multi[0].text
    echo = [c for c in commands if c.text == "echo $?"]
    assert echo and echo[0].shown == ["0"]


def test_every_documented_command_runs_as_written(tmp_path, shared_cache):
    """The tutorial, the reference and the example-stack page, as a user runs them: one shell,
    from a fresh clone, on the machine's cache holding the released wheels they name, with an
    empty HOME and no git identity. Each command must exit as the page says (`echo $?` under
    it), else 0."""
    import subprocess
    import sys

    from helpers.env import shared_example_releases

    shared_example_releases()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "patchforge").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
    (bindir / "patchforge").chmod(0o755)
    outputs = tmp_path / "out"
    outputs.mkdir()
    commands = [c for doc in RUN_DOCS for c in doc_commands(REPO_ROOT / doc)]
    script = [f"exec 3>{outputs / 'rc'}", f"cd {scratch}"]
    expected: list[int | None] = []

    def here(text: str) -> str:
        # /tmp/ first: the checkout itself may live under /tmp.
        return text.replace("/tmp/", f"{scratch}/").replace("/path/to/patchforge",
                                                            str(REPO_ROOT))

    for index, command in enumerate(commands):
        text = here(command.text)
        skipped = next((reason for prefix, reason in SKIP.items() if text.startswith(prefix)),
                       None)
        following = commands[index + 1] if index + 1 < len(commands) else None
        if text == "echo $?":
            expected.append(None)  # its output is checked instead
        elif following is not None and following.text == "echo $?":
            expected.append(int(following.shown[0]))
        else:
            expected.append(0)
        if skipped:
            script.append(f"echo skipped >&3; (exit {expected[-1] or 0})")
            continue
        script.append(f"{{\n{text}\n}} >{outputs / str(index)} 2>&1\n"
                      "__rc=$?; echo $__rc >&3; (exit $__rc)")
    # (TMPDIR: the tutorial's `mktemp -d` makes its directory in the test's scratch.) As on a
    # fresh machine: no git identity (the isolation gives one through GIT_AUTHOR_* and
    # GIT_COMMITTER_*; HOME is empty): the tutorial's `pr` was refused there, exit 2.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_")) and key != "EMAIL"}
    env.update(PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(REPO_ROOT),
               TMPDIR=str(scratch))
    subprocess.run(["bash", "-c", "\n".join(script)], env=env, capture_output=True, text=True,
                   timeout=1800)
    codes = (outputs / "rc").read_text().split()
    assert len(codes) == len(commands), (len(codes), len(commands))
    failures = []
    for index, (command, code, want) in enumerate(zip(commands, codes, expected)):
        if code == "skipped":
            continue
        output = (outputs / str(index)).read_text(errors="replace")
        if want is None:
            if output.strip() != command.shown[0].strip():
                failures.append(f"{command.doc}:{command.line}: `echo $?` printed "
                                f"{output.strip()!r}, the page shows {command.shown[0]!r}")
        elif int(code) != want:
            failures.append(f"{command.doc}:{command.line}: `{command.text}` exited {code}, "
                            f"the page says {want}\n{output[-800:]}")
        elif missing := shown_but_not_printed([here(line) for line in command.shown], output):
            failures.append(f"{command.doc}:{command.line}: `{command.text}` did not print "
                            "what the page shows:\n" + "\n".join(missing)
                            + f"\n--- it printed:\n{output[-1500:]}")
    assert not failures, "\n\n".join(failures)



def test_each_exit_of_verify_image_is_one_the_deployment_page_gives(tmp_path, registry_server):
    """docs/deployment.md gave `verify --image`'s exits as 0, 1 and 2, "registry error"
    among the 2s; a registry that gives no answer (down, 503 on every retry) exits 75, run it
    again later, which a deploy script written from that paragraph did not know of. The exit
    codes it gives under the command are the ones the command exits with: a registry that
    answers 503 every time, one that does not have the image."""
    from helpers.cli import run_cli
    from helpers.deploy import example_stack

    page = (REPO_ROOT / "docs/deployment.md").read_text()
    command = page.index("patchforge verify --image vllm/")
    said = page[command:page.index("\n\n", page.index("```\n", command) + 5)]
    documented = {int(code) for code in re.findall(r"\bExit (\d+):", said)}
    assert {0, 1, 2} <= documented, said
    (tmp_path / "stack").mkdir()
    root = example_stack(tmp_path / "stack")
    digest = "sha256:" + "e6" * 32
    registry_server.misbehave("status", path="/v2/", status=503, headers={"Retry-After": "0"},
                              times=1000)
    down = run_cli(root, "verify", "--image", f"{registry_server.host}/vllm/x@{digest}",
                   "--profile", "gfx942")
    assert down.rc == 75 and "503" in down.err, down.text
    registry_server.misbehaviours.clear()
    unknown = run_cli(root, "verify", "--image", f"{registry_server.host}/vllm/x@{digest}",
                      "--profile", "gfx942")
    assert unknown.rc == 2, unknown.text
    assert {down.rc, unknown.rc} <= documented, (sorted(documented), said)

def test_the_quilt_round_trip_of_coming_from_runs_as_written(tmp_path):
    """docs/coming-from.md's "Working in quilt and coming back", on a stack of two upstreams as
    this repository's (vllm, aiter), with the real quilt: the page's commands, run as written
    in one shell, with the edits its comments ask for made where they say. As written before,
    the export wrote /tmp/q/vllm/ and /tmp/q/aiter/, and the way back exited 2 ("several
    upstreams are configured"): the walkthrough failed on the page's own kind of stack."""
    import subprocess
    import sys

    from helpers.cli import ok
    from helpers.env import need_tool
    from helpers.git import git
    from helpers.project import add_git_upstream, make_project
    from helpers.upstream import Upstream

    need_tool("quilt")
    text = (REPO_ROOT / "docs/coming-from.md").read_text()
    section = text[text.index("### Working in quilt and coming back"):]
    block = section[section.index("```sh\n") + 6:section.index("\n```", section.index("```sh"))]
    files = {"a.py": b"".join(b"a%d = %d\n" % (i, i) for i in range(20)),
             "b.py": b"".join(b"b%d = %d\n" % (i, i) for i in range(20))}
    vllm = Upstream(tmp_path / "vllm-upstream", files, message="vllm")
    aiter = Upstream(tmp_path / "aiter-upstream", {"c.py": b"c = 1\n"}, message="aiter")
    root = make_project(tmp_path / "stack", pyproject=True)
    add_git_upstream(root, "vllm", vllm.path, "main")
    add_git_upstream(root, "aiter", aiter.path, "main")
    for upstream, path, content, name in (
            ("vllm", "a.py", files["a.py"].replace(b"a3 = 3\n", b"a3 = 33\n"), "fix-a"),
            ("vllm", "b.py", files["b.py"].replace(b"b3 = 3\n", b"b3 = 33\n"), "fix-b"),
            ("aiter", "c.py", b"c = 2\n", "fix-aiter")):
        overlay = tmp_path / f"{name}.overlay"
        overlay.write_bytes(content)
        ok(root, "import", "overlay", str(overlay), "--upstream", upstream, "--path", path,
           "--name", name, "-m", f"Fix {path}")
    aiter_series = {p.name: p.read_bytes() for p in (root / "series/aiter").iterdir()
                    if p.is_file()}
    checkout = tmp_path / "vllm-at-the-pin"
    git(tmp_path, "clone", "-q", str(vllm.path), str(checkout))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = ["set -e"]
    for line in block.splitlines():
        script.append(line.replace("/tmp/", f"{scratch}/")
                      .replace("/path/to/vllm-at-the-pin", str(checkout)))
        changed = re.search(r"# change (\S+), then:", line)
        if changed:  # the change the comment asks for, made as an editor would
            script.append(f"printf 'changed = 1\\n' >> {changed.group(1)}")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "patchforge").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
    (bindir / "patchforge").chmod(0o755)
    quiltrc = tmp_path / "quiltrc"
    quiltrc.write_text("")
    env = {key: value for key, value in os.environ.items()  # a fresh machine: no git identity
           if not key.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_")) and key != "EMAIL"}
    env.update(PATH=f"{bindir}:{os.environ['PATH']}", QUILTRC=str(quiltrc),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    env.pop("QUILT_PATCHES", None)
    run = subprocess.run(["bash", "-c", "\n".join(script)], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout, run.stderr, script)
    series = (root / "series/vllm/series").read_text().split()
    assert series == ["fix-a.patch", "fix-b.patch", "fix-c.patch"], series
    assert b"+changed = 1\n" in (root / "series/vllm/fix-a.patch").read_bytes()
    assert b"+changed = 1\n" in (root / "series/vllm/fix-c.patch").read_bytes()
    assert {p.name: p.read_bytes() for p in (root / "series/aiter").iterdir()
            if p.is_file()} == aiter_series
    status = ok(root, "status")
    assert "all 4 patches apply" in status.out, status.out


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation but `-` and `_` dropped,
    spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_known_wrong_answers_have_a_heading_the_readme_and_reference_link_to():
    """The answers known to be wrong today (a kept fix read as superseded with exit 0, among
    them) were a paragraph in the middle of guarantees.md's section 3a: no heading, and neither
    the README nor the reference pointed at it. A user deciding whether to trust a verdict must
    find it: it has its own heading now, and each link of these pages names a heading."""
    headings = {path: {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", path.read_text(),
                                                               re.M)}
                for path in DOCS if path.suffix == ".md"}
    guarantees = REPO_ROOT / "docs/guarantees.md"
    assert "where-these-rules-are-known-not-to-hold-yet" in headings[guarantees]
    for page in (REPO_ROOT / "README.md", REPO_ROOT / "docs/reference.md"):
        text = page.read_text()
        assert "guarantees.md#where-these-rules-are-known-not-to-hold-yet)" in text, page
    for page in (REPO_ROOT / "README.md", REPO_ROOT / "docs/reference.md", guarantees):
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md|)#([\w-]+)\)", page.read_text()):
            linked = (page.parent / target).resolve() if target else page
            assert anchor in headings.get(linked, set()), (page.name, target, anchor)


def test_the_readmes_status_figures_are_the_targets_tables_latest():
    """README quoted an older pass's `status --against` figures (3.2-3.6x with --json,
    4.7-5.8x first asked) and never the 2,515-commit row, where the target is missed most.
    Each figure it gives now is in the table row of docs/performance.md it summarizes."""
    readme = (REPO_ROOT / "README.md").read_text()
    speed = readme[readme.index("Speed, measured by"):]
    said = speed[speed.index("`status --against`"):speed.index("A `--skip`")]
    performance = (REPO_ROOT / "docs/performance.md").read_text()
    row = next(line for line in performance.splitlines()
               if line.startswith("| `status --against` within 3x of `git cherry`"))
    assert "2,515" in said and "2,515" in row
    figures = re.findall(r"(\d+\.\d+)(?:-(\d+\.\d+))?(x| s)", said)
    assert len(figures) >= 5, said
    for low, high, unit in figures:
        for figure in filter(None, (low, high)):
            assert f"{figure}{unit}" in row, (figure + unit, row[:300])
