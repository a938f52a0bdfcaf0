"""The exit codes a script reads, and the hint beside each refusal, as a user meets them on the
command line: a service that does not answer is told from bad input (75, not 2)."""
from __future__ import annotations

import json

from helpers.cli import run_cli
from helpers.project import git_project

DEAD = "127.0.0.1:9"  # the discard port: nothing listens there


def test_a_registry_that_does_not_answer_exits_75_with_a_hint_to_run_again(tmp_path):
    """An image whose registry cannot be reached: before, exit 2 ("bad usage or input; the
    message names the file and line") with no hint, so a CI job could not tell "run again
    later" from "fix the configuration". Now exit 75 (sysexits' EX_TEMPFAIL), in the --json
    error document too, with a hint saying nothing asked was wrong."""
    root, _ = git_project(tmp_path)
    run = run_cli(root, "status", "--json", "--against", f"up={DEAD}/org/img:nightly")
    assert run.rc == 75, run.text
    assert f"cannot connect to {DEAD}" in run.err, run.err
    hint = run.err.rsplit("hint: ", 1)[-1]
    assert "run the command again later" in hint and "nothing in the project" in hint, run.err
    error = json.loads(run.out)["error"]
    assert error["exit_code"] == 75 and error["hint"] == hint.strip(), error


def test_bump_and_verify_against_a_registry_that_does_not_answer_exit_75(tmp_path):
    """`bump --image` and `verify --image`, the commands a CI job runs against a registry:
    exit 75 and the hint to run again, never 2 with nothing to fix."""
    root, _ = git_project(tmp_path)
    assert run_cli(root, "overlays").rc == 0
    for args in (("bump", "up", "--image", f"{DEAD}/org/img", "--dry-run"),
                 ("verify", "--image", f"{DEAD}/org/img:nightly")):
        run = run_cli(root, *args)
        assert run.rc == 75, (args, run.text)
        assert "run the command again later" in run.err.rsplit("hint: ", 1)[-1], run.err


def test_every_exit_code_is_listed_wherever_the_exit_codes_are():
    """README, the tutorial, `patchforge --help` and the reference's table list every exit code
    patchforge ends with (errors.EXIT_*): the README and --help lacked 143 (SIGTERM, what a
    cancelled CI job or `timeout` sees), and none had a code for a service not answering."""
    import re
    from pathlib import Path

    from patchforge import errors

    codes = sorted({value for name, value in vars(errors).items() if name.startswith("EXIT_")})
    assert 75 in codes and 143 in codes, codes
    docs = Path(__file__).resolve().parents[1]
    usage = run_cli(None, "--help")
    assert usage.rc == 0, usage.text
    paragraphs = {
        "README.md": re.search(r"^Exit codes:.*?\n\n", (docs / "README.md").read_text(),
                               re.S | re.M).group(0),
        "docs/tutorial.md": re.search(r"^Exit codes matter.*?\n\n",
                                      (docs / "docs/tutorial.md").read_text(),
                                      re.S | re.M).group(0),
        "--help": usage.out[usage.out.index("Exit codes:"):],
        "docs/reference.md": re.search(r"^## Exit codes\n.*?\n\n(?:\|.*\n)+",
                                       (docs / "docs/reference.md").read_text(),
                                       re.S | re.M).group(0),
    }
    for where, text in paragraphs.items():
        said = {int(n) for n in re.findall(r"(?<![\d.])(\d{1,3})(?![\d.%])", text)}
        assert set(codes) <= said, (where, sorted(set(codes) - said))


def test_a_wheel_upstream_refuses_the_git_forms_naming_its_kind_and_what_it_takes(
        tmp_path, monkeypatch):
    """The README's target forms (a commit, a branch or tag, `nightly-<sha>`, `+g<sha>`) are a
    git upstream's. On a wheel upstream, as the example stack's, a commit or branch was refused
    without saying what the SPEC was read as, and a `+g<sha>` version went to pip, whose
    "check the package name" sent the user after a name that is right. Now each refusal names
    the upstream's kind, what the SPEC names, and the forms a wheel upstream takes; a `+g`
    wheel the index does hold (a nightly wheel index) is still taken."""
    from helpers.cli import ok
    from helpers.upstream import build_wheel

    wheels, index = tmp_path / "wheels", tmp_path / "index"
    build_wheel(wheels, "tinypkg", "1.0", {"tinypkg/calc.py": b"one\n"})
    build_wheel(index, "tinypkg", "1.1+gabc1234", {"tinypkg/calc.py": b"two\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip looks in `index` alone, never the network
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0",
       "--install-root", "/opt/tiny")
    for spec, what in (("2346c1951967", "names a commit,"), ("main", "names a branch or tag"),
                       ("nightly-" + "0" * 40, "names a nightly by its commit"),
                       ("1.0+g2346c19", "names a commit by its `+g` part")):
        run = run_cli(root, "status", "--against", f"tiny={spec}")
        assert run.rc == 2, (spec, run.text)
        first = run.err.splitlines()[0]
        assert "upstream tiny is a wheel upstream" in first and what in first and \
            "a wheel upstream takes a version of tinypkg or an image" in first, (spec, run.err)
        assert "check the package name" not in run.err, (spec, run.err)
    taken = run_cli(root, "status", "--against", "tiny=1.1+gabc1234")
    assert taken.rc in (0, 1) and "1.1+gabc1234" in taken.text, taken.text


def test_a_plus_g_version_pip_lacks_says_pips_errors_and_an_unreachable_index_exits_75(
        tmp_path, monkeypatch):
    """A `+g<hex>` version pip could not download was refused with pip's first line (often a
    WARNING of an extra index) as though the SPEC's form were wrong, and so was one asked of
    an index pip could not connect to. Now the refusal says pip has no wheel of that version
    with pip's ERROR lines, and an index pip could not reach exits 75 (run it again), the
    plain version as the `+g` one."""
    from helpers.cli import ok
    from helpers.upstream import build_wheel

    wheels, index = tmp_path / "wheels", tmp_path / "index"
    build_wheel(wheels, "tinypkg", "1.0", {"tinypkg/calc.py": b"one\n"})
    index.mkdir()
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0",
       "--install-root", "/opt/tiny")
    lacking = run_cli(root, "status", "--against", "tiny=1.1+g2346c19")
    assert lacking.rc == 2, lacking.text
    first = lacking.err.splitlines()[0]
    assert "pip has no wheel of that version (pip: ERROR: " in first and \
        "No matching distribution found for tinypkg==1.1+g2346c19" in first and \
        "a wheel upstream takes a version of tinypkg" in first, lacking.err
    # The index is down: pip retries once (its default is 5) and says the connection failed.
    monkeypatch.delenv("PIP_NO_INDEX")
    monkeypatch.delenv("PIP_FIND_LINKS")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://{DEAD}/simple")
    monkeypatch.setenv("PIP_RETRIES", "1")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    for spec in ("1.1", "1.1+g2346c19"):
        run = run_cli(root, "status", "--against", f"tiny={spec}")
        assert run.rc == 75, (spec, run.text)
        assert "names a commit" not in run.err and "could not reach its package index" in \
            run.err, (spec, run.err)


def test_a_wheel_upstream_added_without_install_root_is_said_at_once(tmp_path, monkeypatch):
    """`upstream add --wheel` without `--install-root` pinned without a word (exit 0); only
    the next `overlays` warned and `verify` failed. The add says at once what it means, and
    with --install-root says nothing of it."""
    from helpers.cli import ok
    from helpers.upstream import build_wheel

    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.0", {"tinypkg/calc.py": b"one\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    bare = run_cli(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    assert bare.rc == 0, bare.text
    assert "note: tiny has no install-root: the compose fragment will mount none of its " \
           "overlay files" in bare.err and "--install-root DIR" in bare.err, bare.err
    placed = run_cli(root, "upstream", "add", "tiny2", "--wheel", "tinypkg", "--at", "1.0",
                     "--install-root", "/opt/tiny")
    assert placed.rc == 0 and "install-root" not in placed.err, placed.text


def test_a_git_remote_that_cannot_be_connected_to_exits_75_and_a_missing_one_2(tmp_path):
    """A git upstream whose http remote refuses the connection: exit 2 before, as for a
    wrong URL. Now 75, as for a registry: git said it could not connect, which running it
    again later may mend. A remote path with no repository is an answer: still 2."""
    import re
    import shutil

    root, _ = git_project(tmp_path)
    config = root / "pyproject.toml"
    local = config.read_text()
    config.write_text(re.sub(r'"[^"]*up-upstream[^"]*"', f'"http://{DEAD}/up.git"', local))
    for args in (("status", "--against", "up=main"), ("rebase", "--to", "up=main"), ("fetch",)):
        run = run_cli(root, *args)
        assert run.rc == 75, (args, run.text)
        assert f"Failed to connect to {DEAD.split(':')[0]}" in run.err, run.err
    config.write_text(local)
    shutil.move(tmp_path / "up-upstream", tmp_path / "away")
    gone = run_cli(root, "status", "--against", "up=main")
    assert gone.rc == 2, gone.text
