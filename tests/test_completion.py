"""`patchforge completion`: the scripts click generates, and completion driven the way a shell
drives it (the `_PATCHFORGE_COMPLETE` environment protocol, and bash sourcing the script)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

PATCHFORGE = [sys.executable, "-m", "patchforge"]


def run(args, env_extra=None, **kw):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run(PATCHFORGE + list(args), capture_output=True, env=env, text=True,
                          timeout=60, **kw)


def complete(shell: str, words: str, cword, tmp_path):
    """Ask patchforge for completions exactly as the generated script does."""
    env = {"_PATCHFORGE_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    env_full = dict(os.environ, **env)
    # prog_name comes from argv[0]; the installed entry point is what a shell runs.
    exe = shutil.which("patchforge")
    cmd = [exe] if exe else PATCHFORGE
    proc = subprocess.run(cmd, capture_output=True, env=env_full, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("shell,marker", [
    ("bash", "complete -o nosort -F _patchforge_completion patchforge"),
    ("zsh", "#compdef patchforge"),
    ("fish", "complete --no-files --command patchforge"),
])
def test_script_is_printed_for_each_shell(shell, marker):
    proc = run(["completion", shell])
    assert proc.returncode == 0, proc.stderr
    assert marker in proc.stdout
    assert "_PATCHFORGE_COMPLETE" in proc.stdout
    assert proc.stderr == ""


def test_unknown_shell_is_bad_usage():
    proc = run(["completion", "tcsh"])
    assert proc.returncode == 2
    assert "tcsh" in proc.stderr
    assert proc.stdout == ""


def test_bash_protocol_completes_subcommand(tmp_path):
    out = complete("bash", "patchforge sta", 1, tmp_path)
    assert out.splitlines() == ["plain,status"]


def test_bash_protocol_completes_after_global_options(tmp_path):
    out = complete("bash", f"patchforge --root {tmp_path} --offline reb", 4, tmp_path)
    assert out.splitlines() == ["plain,rebase"]


def test_bash_protocol_completes_subcommand_options(tmp_path):
    out = complete("bash", "patchforge status --ag", 2, tmp_path)
    assert "plain,--against" in out.splitlines()


def test_zsh_protocol_offers_commands_with_help(tmp_path):
    out = complete("zsh", "patchforge re", 1, tmp_path).splitlines()
    # zsh gets triples: type, value, help
    values = {out[i + 1] for i in range(0, len(out) - 2, 3)}
    assert {"rebase", "refresh", "rename"} <= values


def test_completion_shell_argument_completes(tmp_path):
    out = complete("bash", "patchforge completion z", 2, tmp_path)
    assert out.splitlines() == ["plain,zsh"]


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("patchforge") is None,
                    reason="needs bash and the installed patchforge entry point")
def test_sourced_bash_script_fills_compreply(tmp_path):
    """The whole loop: bash sources our script, then its completion function asks patchforge."""
    script = (
        'source <(patchforge completion bash) || exit 9\n'
        'COMP_WORDS=(patchforge sta); COMP_CWORD=1\n'
        '_patchforge_completion patchforge\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["status"]


def _patchforge_on_path(tmp_path) -> dict[str, str]:
    """An environment whose PATH has a `patchforge` running this checkout's code, as the
    sourced bash script calls it by name."""
    from helpers.env import REPO_ROOT
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "patchforge"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
    shim.chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(REPO_ROOT))


def test_bash_types_no_space_after_an_upstream_and_equals(tmp_path):
    """`patchforge status --against u<TAB>` completed to `up= `: bash typed a space after the
    one match, so the SPEC typed next was an argument of its own (`--against up= main`,
    refused). The script now asks bash for no space after a value ending in `=`, and for the
    usual space after any other (a command, a patch name)."""
    from helpers.project import git_project

    root, _ = git_project(tmp_path)
    env = _patchforge_on_path(tmp_path)
    script = (
        'source <(patchforge completion bash) || exit 9\n'
        'compopt() { echo "compopt $1 $2"; }  # bash allows it only while completing: recorded\n'
        'for words in "patchforge status --against u" "patchforge sta"; do\n'
        '  read -r -a COMP_WORDS <<< "$words"; COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n'
        '  COMPREPLY=(); _patchforge_completion patchforge\n'
        '  echo "${COMPREPLY[*]}"\n'
        'done\n'
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["compopt -o nospace", "up=", "status"], proc.stdout


def test_bash_completes_the_profile_of_verify_and_the_fix_bring_back_takes(tmp_path):
    """`patchforge verify --image REF --profile <TAB>` (the deployment doc's own command) and
    `import overlay FILE --profiles <TAB>` completed nothing, while `export --profile` and
    `check --profile` gave the profiles; `bring-back <TAB>` gave nothing either, with a fix a
    rebase set aside in skipped/. Each now completes the project's own names: the profiles,
    and the fixes bring-back takes (not those in the series)."""
    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 11))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base}, profiles={"gfx942": "MI300X"})
    stack.add_fix("fa", "pkg/a.py", base, base.replace(b"a line 5\n", b"a line 5, fa\n"))
    stack.add_fix("fb", "pkg/a.py", base.replace(b"a line 5\n", b"a line 5, fa\n"),
                  base.replace(b"a line 5\n", b"a line 5, fa\n").replace(b"a line 9\n",
                                                                        b"a line 9, fb\n"))
    stack.commit({"pkg/a.py": base.replace(b"a line 5\n", b"a line 5 upstream\n")}, "up: 5",
                 tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    env = _patchforge_on_path(tmp_path)
    script = (
        'source <(patchforge completion bash) || exit 9\n'
        'compopt() { :; }  # bash allows it only while completing\n'
        'for words in "patchforge verify --image r:t --profile " '
        '"patchforge import overlay f.py --profiles " "patchforge bring-back " '
        '"patchforge export --profile "; do\n'
        '  read -r -a COMP_WORDS <<< "$words"; COMP_WORDS+=(""); '
        'COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n'
        '  COMPREPLY=(); _patchforge_completion patchforge\n'
        '  echo "${COMPREPLY[*]}"\n'
        'done\n'
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=stack.root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["gfx942", "gfx942", "fa", "gfx942"], proc.stdout


def _typed_in(shell: str, root, home, keys: list[bytes]) -> list[str]:
    """`keys` typed into an interactive `shell` (a real terminal: a pty) that loaded
    `patchforge completion SHELL` as its documentation says, in the project `root`; each
    `\\t` waits for the shell to complete. What the line ran: the arguments patchforge got (a
    `patchforge` first on PATH records them, and answers completions and the script itself)."""
    import pty
    import select
    import time

    from helpers.env import REPO_ROOT

    bindir = home / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    got = home / "argv"
    shim = bindir / "patchforge"
    shim.write_text('#!/bin/sh\nif [ -n "$_PATCHFORGE_COMPLETE" ] || [ "$1" = completion ]; then\n'
                    f'  exec "{sys.executable}" -m patchforge "$@"\nfi\n'
                    f'printf "%s\\n" "$@" > "{got}"\n')
    shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(REPO_ROOT),
               HOME=str(home), TERM="xterm", ZDOTDIR=str(home),
               XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
    if shell == "zsh":
        (home / ".zshrc").write_text('autoload -Uz compinit && compinit -u\n'
                                     'eval "$(patchforge completion zsh)"\nPS1="READY> "\n')
    else:
        (home / "config" / "fish").mkdir(parents=True)
        (home / "config" / "fish" / "config.fish").write_text(
            "patchforge completion fish | source\n"
            "function fish_prompt; echo 'READY> '; end\nfunction fish_greeting; end\n")
    pid, fd = pty.fork()
    if pid == 0:  # the shell, in the terminal's other end
        os.chdir(root)
        os.execvpe(shell, [shell, "-i"], env)
    seen = b""

    def wait_for(pattern: bytes, seconds: float) -> None:
        nonlocal seen
        end = time.monotonic() + seconds
        while pattern not in seen and time.monotonic() < end:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    return
    try:
        wait_for(b"READY> ", 60)
        for key in keys:
            before = len(seen)
            os.write(fd, key)
            # A completion is asked of patchforge: waited for until the shell has echoed
            # something new and then stays quiet.
            end = time.monotonic() + (20 if key.endswith(b"\t") else 0)
            while time.monotonic() < end:
                if select.select([fd], [], [], 1.5)[0]:
                    seen += os.read(fd, 4096)
                elif len(seen) > before:
                    break
        os.write(fd, b"\r")
        end = time.monotonic() + 60
        while not got.exists() and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(0.2)
        return got.read_text().splitlines() if got.exists() else [f"(nothing ran) {seen!r}"]
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_type_no_space_after_an_upstream_and_equals(tmp_path, shell):
    """`patchforge status --against u<TAB>` in zsh typed `up= ` with a space, so the SPEC
    typed next was an argument of its own (`--against up= main`, refused), as bash did
    before; fish completed nothing at all (click's fish script split its answer into words
    and failed on each). Typed into the real shells: `up=` and the SPEC are one argument, and
    a command or a patch name still gets its space."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    from helpers.project import git_project

    root, _ = git_project(tmp_path)
    assert _typed_in(shell, root, tmp_path / "a", [b"patchforge status --against u\t", b"main"]) \
        == ["status", "--against", "up=main"]
    assert _typed_in(shell, root, tmp_path / "b", [b"patchforge stat\t", b"--json"]) \
        == ["status", "--json"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_complete_an_option_written_with_equals(tmp_path, shell):
    """`patchforge status --against=u<TAB>`, the `--name=value` form click takes: zsh put the
    answer, `up=`, in place of the whole word, and the line ran `patchforge status up=main`
    (the option gone, refused); fish offered nothing. Typed into the real shells, the word is
    completed as written (bash breaks its words at `=` and always did)."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    from helpers.project import git_project

    root, _ = git_project(tmp_path)
    assert _typed_in(shell, root, tmp_path / "a", [b"patchforge status --against=u\t",
                                                   b"main"]) == ["status", "--against=up=main"]
    assert _typed_in(shell, root, tmp_path / "b", [b"patchforge status --against u\t",
                                                   b"main"]) == ["status", "--against", "up=main"]


def test_bash_completes_the_upstream_bump_takes_and_the_commands_help_takes(tmp_path):
    """`patchforge bump <TAB>` completed nothing, though bump's one argument is an upstream
    (as `fetch`'s are, which completed), and `patchforge help reb<TAB>` nothing, though help
    takes the command words `patchforge reb<TAB>` completes. Both complete now, in bash as
    the script drives it."""
    from helpers.project import git_project

    root, _ = git_project(tmp_path)
    env = _patchforge_on_path(tmp_path)
    script = (
        'source <(patchforge completion bash) || exit 9\n'
        'compopt() { :; }  # bash allows it only while completing\n'
        'for words in "patchforge bump " "patchforge help reb" "patchforge help import o" '
        '"patchforge help upstream p"; do\n'
        '  read -r -a COMP_WORDS <<< "$words"; [ "${words: -1}" = " " ] && COMP_WORDS+=(""); '
        'COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n'
        '  COMPREPLY=(); _patchforge_completion patchforge\n'
        '  echo "${COMPREPLY[*]}"\n'
        'done\n'
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["up", "rebase", "overlay", "pin"], proc.stdout


def test_the_zsh_line_the_help_gives_works_in_a_zshrc_without_compinit(tmp_path):
    """`completion --help`: `eval "$(patchforge completion zsh)"` (in ~/.zshrc). In a ~/.zshrc
    without compinit before it (zsh's own default has none) it said "command not found:
    compdef" at every start, exit 127, and completed nothing. The script loads compinit where
    it is not loaded, and registers the completion."""
    from helpers.env import REPO_ROOT

    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed")
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), ZDOTDIR=str(home), PYTHONPATH=str(REPO_ROOT))
    line = f'eval "$({sys.executable} -m patchforge completion zsh)"'
    proc = subprocess.run([zsh, "-f", "-c", line + '\nprint -r -- "registered=$_comps[patchforge]"'],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "compdef" not in proc.stderr, proc.stdout + proc.stderr
    assert "registered=_patchforge_completion" in proc.stdout, proc.stdout
