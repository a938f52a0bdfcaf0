"""`--format github`: annotations a GitHub Actions runner turns into marks on the files, and a
Markdown section appended to $GITHUB_STEP_SUMMARY by each command of a job."""
from __future__ import annotations

import re

from helpers.cli import ok, run_cli
from helpers.git import git
from helpers.patches import plain_patch
from helpers.project import git_project

# The runner's workflow-command syntax: ::name key=value,key=value::message (one line).
COMMAND = re.compile(r"^::(error|warning|notice)(?: ((?:\w+=[^,:]*)(?:,\w+=[^,:]*)*))?::(.*)$")


def annotations(out: bytes) -> list[tuple[str, dict, str]]:
    found = []
    for line in out.decode().splitlines():
        match = COMMAND.match(line)
        if match:
            props = dict(p.split("=", 1) for p in match.group(2).split(",")) if match.group(2) \
                else {}
            found.append((match.group(1), props, match.group(3)))
    return found


def test_lint_overlays_status_verify_in_one_job(tmp_path, monkeypatch):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "good.patch").write_bytes(plain_patch(1, 4, b"Author: A <a@example.com>\n"
                                                          b"Upstream-Status: Pending\n"))
    (series / "bare.patch").write_bytes(plain_patch(2, 14, b""))
    (series / "series").write_text("good.patch\nbare.patch\n")

    lint = run_cli(root, "lint", "--no-forge", "--format", "github")
    assert lint.rc == 1
    marks = annotations(lint.stdout)
    assert ("error", {"file": "series/up/bare.patch",
                      "title": "patchforge lint%3A up/bare.patch"},
            "header: no Upstream-Status or Forwarded: say whether the fix went upstream "
            "(Forwarded: no%2C not-needed or a URL)") not in marks  # data is not escaped for ,
    assert any(level == "error" and props["file"] == "series/up/bare.patch"
               and "no Upstream-Status or Forwarded" in message
               for level, props, message in marks), marks
    assert "up/good.patch" not in " ".join(p.get("title", "") for _, p, _ in marks
                                          if _ == "error")

    ok(root, "overlays")
    overlay = root / "overlays" / "up" / "a.py"
    overlay.write_bytes(overlay.read_bytes() + b"# edited by hand\n")
    check = run_cli(root, "overlays", "--check", "--format", "github")
    assert check.rc == 1
    assert [(level, props["file"]) for level, props, _ in annotations(check.stdout)] == [
        ("error", "overlays/up/a.py")]
    verify = run_cli(root, "verify", "--format", "github")
    assert verify.rc == 1
    assert ("error", "overlays/up/a.py") in [(lv, p.get("file")) for lv, p, _ in
                                             annotations(verify.stdout)]

    upstream = tmp_path / "up-upstream"
    (upstream / "a.py").write_bytes((upstream / "a.py").read_bytes().replace(
        b"line4\n", b"line4 changed upstream\n"))
    git(upstream, "commit", "-qam", "upstream changes line 4")
    status = run_cli(root, "status", "--against", "main", "--format", "github")
    assert status.rc == 1, status.err
    assert ("error", "series/up/good.patch") in [(lv, p.get("file")) for lv, p, _ in
                                                 annotations(status.stdout)]

    text = summary.read_text()
    sections = [line for line in text.splitlines() if line.startswith("### ")]
    assert len(sections) == 4, sections
    assert re.match(r"### patchforge lint: \d+ errors?, \d+ warnings?$", sections[0])
    assert sections[1] == \
        "### patchforge overlays --check: 1 file differs from what the series generates"
    assert sections[2].startswith("### patchforge verify: ")
    assert sections[3].startswith("### patchforge status against up main (")
    assert "| up/good.patch | conflict (needs attention) | hunk 1 of 1 fails in a.py |" in text
    assert "conflict: hunk 1 of 1 fails in a.py" in status.out
    assert "| severity | patch | check | message |" in text
    assert "| error | up/bare.patch | header | no Upstream-Status or Forwarded" in text


def test_a_stack_in_a_subdirectory_annotates_the_repositorys_paths(tmp_path):
    """The action's `working-directory`: the stack at `stack/` of its repository. Annotations
    named files from the stack's root (`series/up/bare.patch`), which the runner looks up
    from the repository's root: none landed on the pull request's files. Each now names the
    file git has in the repository."""
    root, _ = git_project(tmp_path / "repo" / "stack")
    repository = tmp_path / "repo"
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "bare.patch").write_bytes(plain_patch(2, 14, b""))
    (series / "series").write_text("bare.patch\n")
    ok(root, "overlays")
    git(repository, "init", "-q")
    git(repository, "add", "-A")
    git(repository, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "stack")
    files = set(git(repository, "ls-files").splitlines())
    lint = run_cli(root, "lint", "--no-forge", "--format", "github")
    marked = {props.get("file") for _, props, _ in annotations(lint.stdout)}
    stack = root.relative_to(repository).as_posix()  # stack/project
    assert f"{stack}/series/up/bare.patch" in marked and marked - {None} <= files, marked
    overlay = root / "overlays" / "up" / "a.py"
    overlay.write_bytes(overlay.read_bytes() + b"# edited by hand\n")
    check = run_cli(root, "overlays", "--check", "--format", "github")
    assert [props["file"] for _, props, _ in annotations(check.stdout)] == [
        f"{stack}/overlays/up/a.py"]


def test_without_the_format_nothing_is_annotated(tmp_path, monkeypatch):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    root, _ = git_project(tmp_path)
    run = run_cli(root, "lint", "--no-forge")
    assert "::" not in run.out and not summary.exists()


def _project_with_a_bare_patch(tmp_path):
    """A project whose one patch has no header (lint fails on it), and where the action's job
    summary goes."""
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "bare.patch").write_bytes(plain_patch(2, 14, b""))
    (series / "series").write_text("bare.patch\n")
    return root, tmp_path / "summary.md"


def _run_the_action(tmp_path, root, summary, commands: str, patchforge: str | None = None):
    """ci/github-action.sh as the runner runs it, with `patchforge` on PATH as this tree (or
    as the shell script `patchforge`, when given)."""
    import os
    import subprocess
    import sys

    from helpers.env import REPO_ROOT

    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "patchforge"
    exe.write_text(patchforge or f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
    exe.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", GITHUB_STEP_SUMMARY=str(summary),
               COMMANDS=commands, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([str(REPO_ROOT / "ci" / "github-action.sh")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_reusable_action_runs_each_command_with_annotations(tmp_path, monkeypatch):
    """action.yml's run step (ci/github-action.sh) as the runner runs it: each line one command,
    --format github added where it applies, every command run, the worst exit code kept."""
    import yaml

    from helpers.env import REPO_ROOT

    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert "$GITHUB_ACTION_PATH/ci/github-action.sh" in steps[-1]["run"]
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in steps[0]["run"]
    assert set(action["inputs"]) == {"commands", "working-directory", "python", "cache"}

    root, summary = _project_with_a_bare_patch(tmp_path)
    proc = _run_the_action(tmp_path, root, summary,
                           "lint --no-forge\n\n  # a comment\nlist\noverlays --check\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    groups = [line for line in proc.stdout.splitlines() if line.startswith("::group::")]
    assert groups == ["::group::patchforge lint --no-forge --format github",
                      "::group::patchforge list",
                      "::group::patchforge overlays --check --format github"]
    assert "::error title=patchforge lint::patchforge lint --no-forge --format github exited " \
           "with 1" in proc.stdout
    assert any(a[1].get("file") == "series/up/bare.patch" for a in annotations(proc.stdout.encode()))
    assert summary.read_text().count("### patchforge ") == 2


def test_the_action_finds_the_command_after_patchforges_own_options(tmp_path):
    """`--offline lint` (docs/ci.md's second job, the pre-commit hooks' form), `-q status`,
    `--root stack overlays --check`: the action looked at the line's first word only, so these
    ran without --format github (no annotation, no job summary) and the failure was titled
    `patchforge --offline`."""
    root, summary = _project_with_a_bare_patch(tmp_path)
    proc = _run_the_action(tmp_path, root, summary,
                           f"fetch\n--offline lint --no-forge\n--root {root} -q overlays --check\n")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    groups = [line for line in proc.stdout.splitlines() if line.startswith("::group::")]
    assert groups == ["::group::patchforge fetch",
                      "::group::patchforge --offline lint --no-forge --format github",
                      f"::group::patchforge --root {root} -q overlays --check --format github"]
    assert "::error title=patchforge lint::patchforge --offline lint --no-forge --format " \
           "github exited with 1" in proc.stdout, proc.stdout
    assert any(a[1].get("file") == "series/up/bare.patch" for a in annotations(proc.stdout.encode()))
    assert summary.read_text().count("### patchforge ") == 2


def test_the_action_splits_a_command_line_as_a_shell_does(tmp_path):
    """`status --html "my report.html"` in `commands`: the action split lines at blanks only,
    so patchforge got `"my` and `report.html"`, quotes and all (the report went to a file
    named `"my`, with an extra argument refused). A line is split as a shell splits it, quotes
    and `#` comments included, and nothing in it is expanded or run; a line that cannot be
    split (an unclosed quote) is an error naming it, and the other lines still run."""
    root, summary = _project_with_a_bare_patch(tmp_path)
    proc = _run_the_action(tmp_path, root, summary,
                           'status --html "my report.html"  # the report\n'
                           "list '$HOME' \"unclosed\nlist\n")
    groups = [line for line in proc.stdout.splitlines() if line.startswith("::group::")]
    assert groups == ["::group::patchforge status --html my report.html --format github",
                      "::group::patchforge list"], proc.stdout
    assert (root / "my report.html").is_file()
    assert not list(root.glob('"*'))
    assert "::error title=patchforge::cannot read the command line: list '$HOME' \"unclosed" \
        in proc.stdout, proc.stdout
    assert proc.returncode == 2, proc.stdout + proc.stderr


def test_the_action_starts_a_comment_only_where_a_word_starts_with_a_hash(tmp_path):
    """`status --html out#1.html --against up=v2` in `commands`: the action's split took every
    `#` outside quotes for a comment, as Python's shlex does, so patchforge ran `status --html
    out` against the pinned revision: the report went to `out`, and `--against up=v2` was
    silently lost. As in a shell, a comment starts only where an unquoted word starts with `#`."""
    root, summary = _project_with_a_bare_patch(tmp_path)
    upstream = tmp_path / "up-upstream"
    (upstream / "later.txt").write_text("later\n")
    git(upstream, "add", "later.txt")
    git(upstream, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit", "-qm", "v2")
    git(upstream, "tag", "v2")
    v2 = git(upstream, "rev-parse", "v2").strip()
    proc = _run_the_action(tmp_path, root, summary,
                           "status --html out#1.html --against up=v2  # against the next one\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "::group::patchforge status --html out#1.html --against up=v2 --format github" \
        in proc.stdout, proc.stdout
    assert f"up: target v2 {v2[:12]}" in proc.stdout, proc.stdout
    assert (root / "out#1.html").is_file() and not (root / "out").exists()


def test_the_actions_words_are_the_words_bash_makes_of_the_line(tmp_path):
    """Each line's words, as patchforge gets them, are the words bash makes of the same line
    (lines with nothing a shell would expand): a `#` inside a word or quoted is kept, a `#`
    starting an unquoted word starts a comment, and an empty word at the end of a line
    (`pr --title ""`) is still a word; the action's split lost it with the newlines `$(...)`
    strips."""
    import json
    import subprocess
    import sys

    root, summary = _project_with_a_bare_patch(tmp_path)
    lines = ["list --html out#1.html --against up=v2",
             "list '#' x",
             "list a # a comment",
             "list a\t#comment \"unclosed",
             'pr --title ""',
             "pr --title '' --body x",
             "list \"a#b\" \\#c d\\ e 'x y'\"z\" \"\" #",
             "list \"\"#x '' ",
             "list \"a\\\"b\" \"c\\\\d\" 'e\\f'"]
    record = tmp_path / "argv.jsonl"
    recorder = (f'#!/bin/sh\nexec "{sys.executable}" -c "import json, sys; '
                f'open(sys.argv[1], \'a\').write(json.dumps(sys.argv[2:]) + chr(10))" '
                f'"{record}" "$@"\n')
    proc = _run_the_action(tmp_path, root, summary, "\n".join(lines) + "\n", recorder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = [json.loads(line) for line in record.read_text().splitlines()]
    # bash itself: each line as the arguments of a function that prints them NUL-separated.
    wanted = []
    for line in lines:
        out = subprocess.run(["bash", "-c", 'set -f; words() { for w; do printf "%s\\0" "$w"; '
                              'done; }; words ' + line], capture_output=True, check=True).stdout
        wanted.append(out.decode().split("\0")[:-1])
    assert got == wanted
    assert wanted[4] == ["pr", "--title", ""] and wanted[0][2] == "out#1.html"


def test_a_line_ending_in_a_backslash_goes_on_on_the_next_line_as_in_bash(tmp_path):
    """`status --against up=v2 \\` then `--html report.html` in `commands`: the action
    refused the first line ("cannot read the command line ... No escaped character") and ran
    the second alone as a command of its own. As in a shell, the line goes on on the next one;
    each command's words are the words bash makes of the same text read as a script."""
    import json
    import subprocess
    import sys

    root, summary = _project_with_a_bare_patch(tmp_path)
    commands = ["list a \\\n  b \"c \\\nd\" 'e\\' f",
                "list x # a comment \\",
                "list y\\\\",
                "list 'q \\' \\\n\n",
                "list\\\n --html out.html",
                "list z \\"]
    text = "\n".join(commands) + "\n"
    record = tmp_path / "argv.jsonl"
    recorder = (f'#!/bin/sh\nexec "{sys.executable}" -c "import json, sys; '
                f'open(sys.argv[1], \'a\').write(json.dumps(sys.argv[2:]) + chr(10))" '
                f'"{record}" "$@"\n')
    proc = _run_the_action(tmp_path, root, summary, text, recorder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cannot read" not in proc.stdout, proc.stdout
    got = [json.loads(line) for line in record.read_text().splitlines()]
    script = "set -f\nwords() { printf '%s\\0' \"$@\"; printf '\\1'; }\n" + \
        "".join(f"words {command}\n" for command in commands)
    out = subprocess.run(["bash"], input=script.encode(), capture_output=True,
                         check=True).stdout.decode()
    wanted = [chunk.split("\0")[:-1] for chunk in out.split("\1")[:-1]]
    assert got == wanted, (got, wanted)
    assert wanted[0] == ["list", "a", "b", "c d", "e\\", "f"] and wanted[-1] == ["list", "z"]
    assert wanted[4] == ["list", "--html", "out.html"]
    groups = [line for line in proc.stdout.splitlines() if line.startswith("::group::")]
    assert "::group::patchforge list --html out.html" in groups, groups


def test_a_command_that_reads_its_stdin_does_not_eat_the_actions_next_lines(tmp_path):
    """A command of `commands` reading its standard input (`import mbox /dev/stdin`) read the
    lines still to run, which the action reads from there: `list` and `lint` after it never ran,
    and nothing said so. A command's stdin is empty; every line runs."""
    root, summary = _project_with_a_bare_patch(tmp_path)
    proc = _run_the_action(tmp_path, root, summary, "import mbox /dev/stdin\nlist\nlint\n")
    groups = [line for line in proc.stdout.splitlines() if line.startswith("::group::")]
    assert groups == ["::group::patchforge import mbox /dev/stdin", "::group::patchforge list",
                      "::group::patchforge lint --format github"], proc.stdout + proc.stderr
    assert "::error title=patchforge lint::" in proc.stdout, proc.stdout


def test_the_actions_cache_is_outside_the_checkout_unless_chosen(tmp_path):
    """The action's cache defaulted to `${{ github.workspace }}/.cache/patchforge`, inside the
    checkout, whose files a pull request writes (a store.git/config of its choosing with
    them). It is now the job's PATCHFORGE_CACHE, else ~/.cache/patchforge; the `cache` input
    still chooses any other."""
    import os
    import subprocess

    import yaml

    from helpers.env import REPO_ROOT

    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    assert "workspace" not in action["inputs"]["cache"]["default"]
    step = action["runs"]["steps"][-1]
    assert step["env"]["CACHE_INPUT"] == "${{ inputs.cache }}"
    stub = tmp_path / "action" / "ci" / "github-action.sh"
    stub.parent.mkdir(parents=True)
    stub.write_text('#!/bin/sh\necho "$PATCHFORGE_CACHE"\n')
    stub.chmod(0o755)
    home = tmp_path / "home"
    base = {k: v for k, v in os.environ.items() if k != "PATCHFORGE_CACHE"}
    base.update(HOME=str(home), GITHUB_ACTION_PATH=str(tmp_path / "action"), COMMANDS="lint")
    for given, job, wanted in (("", None, f"{home}/.cache/patchforge"),
                               ("", "/srv/job-cache", "/srv/job-cache"),
                               ("/srv/chosen", "/srv/job-cache", "/srv/chosen")):
        env = dict(base, CACHE_INPUT=given, **({"PATCHFORGE_CACHE": job} if job else {}))
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout.strip() == wanted, proc.stdout + proc.stderr


def test_the_actions_cache_is_the_one_the_jobs_later_steps_use(tmp_path):
    """`cache: DIR` set PATCHFORGE_CACHE for the action's own step only, while it put
    `patchforge` on the PATH of the job's later steps: a `run: patchforge --offline status`
    after it used ~/.cache/patchforge, empty, and failed (online, it fetched everything again
    into a cache actions/cache did not keep). The action's step, run by bash as the runner runs
    it, now sets it in $GITHUB_ENV, which the runner reads into the later steps' environment;
    a cache input holding a line break (which would set another variable there) is refused."""
    import os
    import subprocess
    import sys

    import yaml

    from helpers.env import REPO_ROOT

    root, summary = _project_with_a_bare_patch(tmp_path)
    step = yaml.safe_load((REPO_ROOT / "action.yml").read_text())["runs"]["steps"][-1]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "patchforge").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
    (bindir / "patchforge").chmod(0o755)
    home = tmp_path / "home"
    chosen = tmp_path / "chosen-cache"
    github_env = tmp_path / "github_env"
    github_env.write_text("")
    job = {k: v for k, v in os.environ.items() if k not in ("PATCHFORGE_CACHE", "XDG_CACHE_HOME")}
    job.update(HOME=str(home), PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(REPO_ROOT),
               GITHUB_STEP_SUMMARY=str(summary), GITHUB_ENV=str(github_env))
    action = dict(job, GITHUB_ACTION_PATH=str(REPO_ROOT), COMMANDS="fetch\n",
                  CACHE_INPUT=str(chosen))
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], env=action, cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (chosen / "store.git").is_dir()
    # The runner: each NAME=value line of $GITHUB_ENV goes into the later steps' environment.
    later = dict(job)
    for line in github_env.read_text().splitlines():
        name, _, value = line.partition("=")
        later[name] = value
    proc = subprocess.run(["bash", "-e", "-c", "patchforge --offline status"], env=later,
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1) and "up: target" in proc.stdout, proc.stdout + proc.stderr
    assert not (home / ".cache" / "patchforge").exists()
    github_env.write_text("")
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=root, capture_output=True,
                          text=True, timeout=300,
                          env=dict(action, CACHE_INPUT=f"{chosen}\nLD_PRELOAD=/tmp/x.so"))
    assert proc.returncode == 2 and "the cache input holds a line break" in proc.stdout, \
        proc.stdout + proc.stderr
    assert github_env.read_text() == ""


def test_the_action_puts_only_patchforge_on_the_jobs_path(tmp_path):
    """action.yml's install step put its venv's whole bin/ on $GITHUB_PATH: every later step
    of the user's job (`python -m pytest`, `pip install ...`, after actions/setup-python too)
    ran the venv's python and pip, which hold none of the job's packages. Only `patchforge`
    goes on the job's PATH now, and it runs. (The runner's python3 and pip are stood in for by
    scripts that make a venv's layout: the step itself is what is run, as the runner runs it.)"""
    import os
    import subprocess
    from pathlib import Path

    import yaml

    from helpers.env import REPO_ROOT

    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if "GITHUB_PATH" in s.get("run", "")]
    # The venv's python: `-m pip install --quiet PATH` puts the patchforge command beside it,
    # as pip installs a console script.
    venv_python = tmp_path / "venv-python"
    venv_python.write_text('#!/bin/sh\nhere=$(dirname "$0")\n'
                           'printf \'#!/bin/sh\\necho patchforge from %s\\n\' "$5" > "$here/patchforge"\n'
                           'chmod +x "$here/patchforge"\n')
    # The runner's python3: `-m venv DIR` makes a venv's bin/ (python, python3, pip).
    python = tmp_path / "python3"
    python.write_text(f'#!/bin/sh\nset -e\nmkdir -p "$3/bin"\ncp "{venv_python}" "$3/bin/python"\n'
                      'chmod +x "$3/bin/python"\nln -s python "$3/bin/python3"\n'
                      'ln -s python "$3/bin/pip"\n')
    python.chmod(0o755)
    runner = tmp_path / "runner"
    runner.mkdir()
    github_path = tmp_path / "github_path"
    env = dict(os.environ, PYTHON=str(python), RUNNER_TEMP=str(runner),
               GITHUB_PATH=str(github_path), GITHUB_ACTION_PATH=str(REPO_ROOT))
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    added = [Path(line) for line in github_path.read_text().splitlines()]
    assert added, "nothing on the job's PATH"
    on_path = {p.name for d in added for p in d.iterdir()}
    assert on_path == {"patchforge"}, on_path
    ran = subprocess.run(["patchforge"], env=dict(os.environ, PATH=":".join(map(str, added))),
                         capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == f"patchforge from {REPO_ROOT}", ran.stdout + ran.stderr


def test_a_summary_file_that_cannot_be_written_is_named_as_such(tmp_path, monkeypatch):
    """GITHUB_STEP_SUMMARY naming a directory (or a missing one) said only "Is a directory:
    PATH" and "run the command again"; it names the variable and what to do, exit 2."""
    root, _ = git_project(tmp_path)
    for bad in (tmp_path, tmp_path / "missing" / "summary.md"):
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(bad))
        lint = run_cli(root, "lint", "--no-forge", "--format", "github")
        assert lint.rc == 2, lint.text
        assert f"GITHUB_STEP_SUMMARY={bad}: cannot append the summary" in lint.err, lint.err
        assert "unset it" in lint.err and "run the command again" not in lint.err


def test_the_summary_shows_what_patches_hold_and_obeys_no_html_in_it(tmp_path, monkeypatch):
    """lint's findings quote header values into the job summary, which GitHub renders with its
    raw HTML: a `Forwarded: <img src=...>` put an image (a request to any host) into the
    summary, and a `<!--` ... `-->` hid the rest of the cell. They are shown as text now, as in
    series/PATCHES.md and PR.md."""
    from markdown_it import MarkdownIt

    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "odd.patch").write_bytes(plain_patch(
        1, 4, b"Author: A <a@example.com>\nForwarded: <img src=https://tracker.example/p.png>\n"
              b"Upstream-Status: Submitted <!-- hidden --> [x]\n"))
    (series / "series").write_text("odd.patch\n")
    assert run_cli(root, "lint", "--no-forge", "--format", "github").rc == 1
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(summary.read_text())
    assert "<table>" in page
    assert "<img" not in page and "<!--" not in page
    assert "&lt;img src=https://tracker.example/p.png&gt;" in page or \
        "&lt;img src=https://tracker.example/p.png>" in page
    assert "&lt;!-- hidden --&gt;" in page or "&lt;!-- hidden -->" in page


def test_the_summary_makes_no_link_or_image_of_what_patches_hold(tmp_path, monkeypatch):
    """The summary escaped `<` alone: a header value `![t](url)` put a remote image (a request
    to any host) into the job summary and `[x](url)` a link. Shown as written now, the one
    escaper bump's report uses."""
    from markdown_it import MarkdownIt

    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "odd.patch").write_bytes(plain_patch(
        1, 4, b"Author: A <a@example.com>\n"
              b"Forwarded: ![t](https://tracker.example/p.png) [x](https://tracker.example/)\n"))
    (series / "series").write_text("odd.patch\n")
    assert run_cli(root, "lint", "--no-forge", "--format", "github").rc == 0  # warnings
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(summary.read_text())
    assert "<table>" in page
    assert "<img" not in page and "<a " not in page, page
    assert "![t](https://tracker.example/p.png) [x](https://tracker.example/)" in page, page


def test_the_summary_makes_no_mention_or_issue_reference_of_what_patches_hold(tmp_path,
                                                                            monkeypatch):
    """A header value the summary quotes holding `@name` or `owner/repo#N`: GitHub made a
    mention of it (notifying that user on every run) and a cross-reference (an event on that
    issue), which no Markdown escape stops. Each is followed by an empty HTML comment now:
    the page shows the value exactly (and a copy of it is exact), and no run of its text is
    a mention or a reference."""
    from markdown_it import MarkdownIt

    from helpers.rendered import GITHUB_REFERENCE, shown_text, text_runs

    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    quoted = "ask @alice or @org/team: vllm-project/vllm#12, #34, GH-5"
    (series / "odd.patch").write_bytes(plain_patch(
        1, 4, b"Author: A <a@example.com>\nForwarded: " + quoted.encode() + b"\n"))
    (series / "series").write_text("odd.patch\n")
    assert run_cli(root, "lint", "--no-forge", "--format", "github").rc == 0  # warnings
    written = summary.read_text()
    assert "ask @<!-- -->alice or @<!-- -->org/team: vllm-project/vllm#<!-- -->12, " \
        "#<!-- -->34, GH-<!-- -->5" in written, written
    page = MarkdownIt("commonmark", {"html": True}).enable("table").render(written)
    assert quoted in shown_text(page), page
    for run in text_runs(page):
        assert not GITHUB_REFERENCE.search(run), (run, page)


def test_text_shown_literally_makes_no_block_of_an_indented_marker():
    """literal_text escaped a heading's or list's marker only as the very first character:
    CommonMark reads one after up to three spaces too, so `  # x` still made a heading and
    `   - x` a list, also at the start of a quote (`> ` and a note, as bump's report writes
    each). Rendered as CommonMark, each is its one paragraph of text now."""
    import html

    from markdown_it import MarkdownIt

    from patchforge.formats.markdown import literal_text

    md = MarkdownIt("commonmark", {"html": True})
    for text in ("  # Heading", "   - item", " + item", "  1. one", "   2) two", "  > quoted",
                 "# Heading", "Text\n  ===", "    # four spaces"):
        for line in (literal_text(text), "> " + literal_text(text)):
            page = md.render(line)
            assert not re.search(r"<(h\d|ul|ol|li)>|<blockquote>\s*<blockquote>", page), \
                (text, line, page)
            assert text.split("\n")[0].strip() in html.unescape(page), (text, line, page)


def test_a_summary_path_among_the_project_files_is_refused(tmp_path):
    """GITHUB_STEP_SUMMARY naming upstream.lock made `status --format github` append its
    Markdown table to the lock (exit 0), and every later command failed on it; naming a patch,
    `lint` appended to the fix. The summary path is refused as `status --html` refuses its
    own: exit 2 naming the variable and the file, the findings printed, every project file
    byte for byte as it was. Run as a workflow step runs it, in a process of its own."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from helpers.env import REPO_ROOT

    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(plain_patch(1, 4, b"Upstream-Status: Pending\n"))
    (series / "series").write_text("fix.patch\n")
    (root / "overlays").mkdir(exist_ok=True)
    owned = ["upstream.lock", "pyproject.toml", "series/up/fix.patch", "series/up/series",
             "overlays/summary.md", ".patchforge/summary.md"]
    before = {name: (root / name).read_bytes() if (root / name).exists() else None
              for name in owned}

    def run(summary: Path, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary), PYTHONPATH=str(REPO_ROOT))
        return subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    for name in owned:
        for command in (["status", "--format", "github"],
                        ["lint", "--no-forge", "--format", "github"]):
            proc = run(root / name, *command)
            assert proc.returncode == 2, (name, command, proc.stdout + proc.stderr)
            assert f"GITHUB_STEP_SUMMARY={root / name}: the project's own" in proc.stderr, \
                proc.stderr
            assert "never written by this command" in proc.stderr, proc.stderr
            # The findings are on stdout before the refusal.
            assert proc.stdout.strip(), proc.stderr
            after = {n: (root / n).read_bytes() if (root / n).exists() else None for n in owned}
            assert after == before, (name, command)
    # A summary beside the project is appended to as before.
    outside = tmp_path / "summary.md"
    proc = run(outside, "lint", "--no-forge", "--format", "github")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert outside.read_text().startswith("### patchforge lint")


def test_the_documented_workflow_never_runs_the_dispatch_input(tmp_path):
    """docs/ci.md's scheduled job pasted the workflow_dispatch input `against` into its
    scripts (`echo "spec=${{ inputs.against || ... }}"`, `status --against ${{ ... }}`): GitHub
    puts a `${{ }}` into the script's text before bash reads it, so an input holding a quote ran
    what followed it. Each step is run here as the runner runs it, its `${{ }}` filled in as
    GitHub fills them, with a hostile input: it reaches patchforge as one word, and runs nothing."""
    import os
    import subprocess

    import yaml

    from helpers.env import REPO_ROOT

    text = (REPO_ROOT / "docs" / "ci.md").read_text()
    block = text.split("## Example workflow")[1].split("```yaml\n", 1)[1].split("```\n", 1)[0]
    job = yaml.safe_load(block)["jobs"]["upstream-watch"]
    given = 'x" ; echo INJECTED ; echo "'
    outputs: dict[str, dict[str, str]] = {}

    def fill(value: str) -> str:
        def one(match: re.Match) -> str:
            expression = match.group(1).strip()
            if expression.startswith("inputs.against"):
                return given
            step = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+)", expression)
            if step:
                return outputs.get(step.group(1), {}).get(step.group(2), "")
            return ""
        return re.sub(r"\$\{\{(.*?)\}\}", one, value)

    calls = tmp_path / "calls"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "patchforge").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{calls}"\n'
                                       'echo "--" >> "' + str(calls) + '"\n')
    (bindir / "patchforge").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
           **{k: fill(str(v)) for k, v in (job.get("env") or {}).items()}}
    ran = 0
    for step in job["steps"]:
        if "run" not in step:
            continue
        output = tmp_path / "output"
        output.write_text("")
        step_env = {**env, **{k: fill(str(v)) for k, v in (step.get("env") or {}).items()},
                    "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(tmp_path / "sum")}
        proc = subprocess.run(["bash", "-e", "-c", fill(step["run"])], cwd=tmp_path,
                              env=step_env, capture_output=True, text=True, timeout=60)
        assert "INJECTED" not in proc.stdout + proc.stderr, (step.get("name"), proc.stdout)
        outputs[step.get("id", "")] = dict(line.split("=", 1) for line in
                                          output.read_text().splitlines() if "=" in line)
        ran += 1
    assert ran >= 2
    words = calls.read_text().splitlines()
    for option in ("--against", "--to"):
        assert words.count(option) >= 1 and all(words[i + 1] == given for i, w in
                                                 enumerate(words) if w == option), words


def test_the_pre_commit_hooks_of_a_stack_in_a_subdirectory_as_the_docs_give_them(tmp_path):
    """A stack in `stack/` of its repository: pre-commit runs a hook at the repository's
    root, "no patchforge configuration ... pass --root DIR", and `args: [--root, stack]` lands
    after the command: "No such option '--root'", exit 2, and docs/ci.md said nothing of it.
    The hooks' own ids with the `entry:` docs/ci.md gives, run as pre-commit runs them (at
    the root, `entry` split as a shell splits it, `args` after it), check the stack."""
    import os
    import shlex
    import subprocess
    import sys

    import yaml

    from helpers.env import REPO_ROOT

    text = (REPO_ROOT / "docs" / "ci.md").read_text()
    hooks = [yaml.safe_load(block)["hooks"] for block in
             re.findall(r"```yaml\n(.*?)```", text, re.S)
             if "entry:" in block and "patchforge-lint" in block]
    assert hooks, "docs/ci.md gives no entry: for a stack in a subdirectory"
    ids = {hook["id"] for hook in yaml.safe_load(
        (REPO_ROOT / ".pre-commit-hooks.yaml").read_text())}
    repo = tmp_path / "repo"
    repo.mkdir()
    stack, _ = git_project(repo)
    stack = stack.rename(repo / "stack")
    ok(stack, "overlays")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "patchforge").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
    (bindir / "patchforge").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(REPO_ROOT))
    for hook in hooks[0]:
        assert hook["id"] in ids
        proc = subprocess.run(shlex.split(hook["entry"]) + list(hook.get("args", [])),
                              cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (hook, proc.stdout + proc.stderr)


def test_a_summary_file_that_is_a_hard_link_to_a_project_file_is_refused(tmp_path):
    """GITHUB_STEP_SUMMARY naming a file outside the project that is a hard link to
    upstream.lock (or to a patch) passed the comparison of paths: `status --format github`
    appended its Markdown to the lock through the link (exit 0), and every later command
    failed `upstream.lock:15: not valid JSON`. The opened file is compared with the project's
    own now: exit 2 naming the variable and the file it is, the findings printed, nothing
    appended. A summary file of its own is appended to as before. Run as a workflow step runs
    it, in a process of its own."""
    import os
    import subprocess
    import sys

    from helpers.env import REPO_ROOT

    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(plain_patch(1, 4, b"Upstream-Status: Pending\n"))
    (series / "series").write_text("fix.patch\n")
    ok(root, "status")
    (root / ".patchforge").mkdir(exist_ok=True)
    (root / ".patchforge" / "notes.md").write_text("kept\n")
    owned = ["upstream.lock", "series/up/fix.patch", "series/up/series", ".patchforge/notes.md"]
    assert (root / "upstream.lock").exists()
    before = {name: (root / name).read_bytes() for name in owned}
    outside = tmp_path / "runner"
    outside.mkdir()

    def run(summary, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary), PYTHONPATH=str(REPO_ROOT))
        return subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    for k, name in enumerate(owned):
        link = outside / f"step_summary_{k}"
        os.link(root / name, link)
        for command in (["status", "--format", "github"],
                        ["lint", "--no-forge", "--format", "github"]):
            proc = run(link, *command)
            assert proc.returncode == 2, (name, command, proc.stdout + proc.stderr)
            assert f"GITHUB_STEP_SUMMARY={link} is the project's own {name} under another " \
                   "name (a hard link)" in proc.stderr, proc.stderr
            assert "nothing was appended" in proc.stderr, proc.stderr
            assert proc.stdout.strip(), proc.stderr  # the findings, before the refusal
            after = {n: (root / n).read_bytes() for n in owned}
            assert after == before, (name, command)
    assert run(tmp_path / "s.md", "status").returncode == 0
    # A file with a second name that is none of the project's is appended to as before.
    mine = outside / "summary.md"
    mine.write_text("")
    os.link(mine, outside / "summary-copy.md")
    proc = run(mine, "lint", "--no-forge", "--format", "github")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert (outside / "summary-copy.md").read_text().startswith("### patchforge lint")
