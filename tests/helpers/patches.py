"""Hand-written patch files for the UPSTREAM_FILES project (helpers.project.git_project): each
changes one line of a.py, with the header a test needs (a forwarded pull request, or none)."""
from __future__ import annotations

from pathlib import Path

from helpers.project import UPSTREAM_FILES, git_project

LINES = UPSTREAM_FILES["a.py"].decode().splitlines()


def forwarded_patch(number: int, line: int) -> bytes:
    """A patch changing line `line` (1-based) of a.py, forwarded as pull request `number`."""
    start = max(1, line - 3)
    end = min(len(LINES), line + 3)
    old = [f" {text}" for text in LINES[start - 1:end]]
    index = line - start
    old[index] = f"-{LINES[line - 1]}"
    body = old[:index + 1] + [f"+{LINES[line - 1]} # fixed"] + old[index + 1:]
    url = f"https://github.com/acme/up/pull/{number}"
    return (f"Description: fix line {line}\nForwarded: {url}\n"
            f"Upstream-Status: Submitted [{url}]\n\n---\n"
            f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
            f"@@ -{start},{end - start + 1} +{start},{end - start + 1} @@\n"
            + "\n".join(body) + "\n").encode()


def plain_patch(number: int, line: int, fields: bytes) -> bytes:
    """forwarded_patch without its Forwarded/Upstream-Status lines, `fields` in their place."""
    url = f"https://github.com/acme/up/pull/{number}".encode()
    return forwarded_patch(number, line).replace(
        b"Forwarded: " + url + b"\nUpstream-Status: Submitted [" + url + b"]\n", fields)


def stack_with_forwarded(tmp_path: Path, api_url: str, count: int = 4,
                         names: list[str] | None = None,
                         profiles: dict[str, str] | None = None) -> Path:
    """A git_project whose series has `count` patches (fix-1.patch..., or `names`), each
    forwarded as a pull request, with the forge API at `api_url`."""
    root, _ = git_project(tmp_path, profiles=profiles)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    names = names or [f"fix-{i + 1}" for i in range(count)]
    for i, name in enumerate(names):
        (series / f"{name}.patch").write_bytes(forwarded_patch(i + 1, 4 + 5 * i))
    (series / "series").write_text("".join(f"{n}.patch\n" for n in names))
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        'api-url = "https://api.github.com"', f'api-url = "{api_url}"'))
    assert api_url in config.read_text()
    return root
