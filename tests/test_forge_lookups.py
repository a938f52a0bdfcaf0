"""Pull requests named by patches are looked up at once, with one deadline; a forge that cannot
be reached is said once (with the --offline hint), and verbosity flags decide what is shown."""
from __future__ import annotations

import json
from pathlib import Path

from servers import forge_server  # noqa: F401  (fixture)
from test_cli_setup import UPSTREAM_FILES, git_project, pf

LINES = UPSTREAM_FILES["a.py"].decode().splitlines()


def forwarded_patch(number: int, line: int) -> bytes:
    """A patch changing line `line` (1-based) of a.py, forwarded as pull request `number`."""
    start = max(1, line - 3)
    end = min(len(LINES), line + 3)
    old = [f" {text}" for text in LINES[start - 1:end]]
    new = list(old)
    index = line - start
    old[index] = f"-{LINES[line - 1]}"
    new[index] = f"+{LINES[line - 1]} # fixed"
    body = old[:index + 1] + [new[index]] + old[index + 1:]
    url = f"https://github.com/acme/up/pull/{number}"
    return (f"Description: fix line {line}\nForwarded: {url}\n"
            f"Upstream-Status: Submitted [{url}]\n\n---\n"
            f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
            f"@@ -{start},{end - start + 1} +{start},{end - start + 1} @@\n"
            + "\n".join(body) + "\n").encode()


def stack_with_forwarded(tmp_path: Path, api_url: str, count: int = 4) -> Path:
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(count):
        name = f"fix-{i + 1}.patch"
        (series / name).write_bytes(forwarded_patch(i + 1, 4 + 5 * i))
        names.append(name)
    (series / "series").write_text("".join(n + "\n" for n in names))
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        'api-url = "https://api.github.com"', f'api-url = "{api_url}"'))
    assert api_url in config.read_text()
    return root


def test_status_asks_for_every_pull_request_at_once(tmp_path, forge_server):  # noqa: F811
    for number in range(1, 5):
        forge_server.add_pull("acme/up", number, state="open")
    root = stack_with_forwarded(tmp_path, forge_server.url)
    run = pf("status", "--json", root=root)
    assert run.code == 0, run.err
    doc = json.loads(run.out)
    assert [p["forwarded"]["state"] for p in doc["patches"]] == ["open"] * 4
    assert sorted(r.path for r in forge_server.requests) == [
        f"/repos/acme/up/pulls/{n}" for n in range(1, 5)]


def test_unreachable_forge_is_said_once_and_costs_one_wait(tmp_path):
    root = stack_with_forwarded(tmp_path, "http://127.0.0.1:9", count=4)
    run = pf("status", root=root)
    assert run.code == 0, run.err
    assert run.err.count("the forge is unreachable") == 1, run.err
    assert "cannot connect to 127.0.0.1:9" in run.err
    assert "try --offline" in run.err
    assert run.text.count("PR: ") == 4
    # With --offline nothing is asked, and there is no --offline hint.
    offline = pf("--offline", "status", root=root)
    assert offline.code == 0 and "try --offline" not in offline.err


def test_quiet_and_verbose_levels(tmp_path):
    root = stack_with_forwarded(tmp_path, "http://127.0.0.1:9", count=1)
    quiet = pf("-q", "--offline", "status", root=root)
    assert quiet.code == 0 and quiet.err == ""
    verbose = pf("-v", "--offline", "status", root=root)
    assert "patchforge: up: judging 1 patch(es) against main" in verbose.err
    assert "git " not in verbose.err  # git commands are debug, not phase lines
    debug = pf("-vv", "--offline", "status", root=root)
    assert "patchforge.git: git " in debug.err and " ms" in debug.err
    plain = pf("--offline", "status", root=root)
    assert "judging" not in plain.err and "patchforge.git" not in plain.err
    assert plain.out == quiet.out == verbose.out == debug.out
