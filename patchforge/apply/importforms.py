"""What a Python file's module-level import statements bind, each form of a statement read as the
name it binds and the module (or module attribute) that name is (`bindings`): `import a.b.c as c`,
`from a.b import c`, `from a.b import (c, d)` and a wrapped import list all bind `c` to `a.b.c`,
while `import a.b.c` binds `a` (and loads `a.b.c`), and `from a.x import c` binds `c` to
another module. A relative import is the module it names from the file's own package
(`package_of`): in `pkg/k.py`, `from .utils import arch` binds `arch` to `pkg.utils.arch`, as
`from pkg.utils import arch` does (a formatter's absolute-imports rule), while
`from other.utils import arch` is another module. The kept-fix rules (`reverts.py`) ask it of
a hunk that only changes import lines (`hunk_imports`): a formatter that rewrote the fix's
import into another form of the same binding left the fix's change upstream, not taken it out.

Only a module's own imports are read, never a function's or a `try:` block's: a file's, the
statements of its body as `ast` reads the whole file; a hunk's (and a file `ast` does not read),
the statements that start a line at its first column, each read alone from its first line to
the line closing its parentheses (or its last backslash); a statement `ast` does not read is no
import.
"""
from __future__ import annotations

import ast
import re
from collections import Counter

# A line that starts a module-level import statement.
_STARTS = re.compile(rb"(?:import|from)[ \t\\(]")
_COMMENT = re.compile(rb"#.*")

Binding = tuple[str, str]


def package_of(path: str | None) -> list[str] | None:
    """The package a Python file at `path` (in its repository) is in, as the names of its
    parts, for its relative imports: its folders from the repository's root (`pkg/ops/k.py`
    and `pkg/ops/__init__.py` are in `pkg.ops`), but for a leading `src/` (the src layout,
    where `src` is no package). None for a file at the root or an unknown path: its relative
    imports are left as written, the same binding only as the same relative import. Only the
    whole path is taken: `from triton.utils import arch` in `aiter/ops/triton/k.py` is the
    `triton` package's, not `from .utils import arch` (`aiter.ops.triton.utils`)."""
    if not path:
        return None
    parts = path.split("/")[:-1]
    if parts[:1] == ["src"]:
        parts = parts[1:]
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return parts


def _statements(lines: list[bytes], package: list[str] | None = None
                ) -> list[tuple[int, int, list[Binding]]]:
    """(first line, line after the last, what it binds) of each module-level import statement
    in `lines` (line contents without their line ends); relative ones from `package`
    (package_of)."""
    found = []
    k = 0
    while k < len(lines):
        if not _STARTS.match(lines[k]):
            k += 1
            continue
        end = k
        depth = 0
        while end < len(lines):
            code = _COMMENT.sub(b"", lines[end]).rstrip()
            depth += code.count(b"(") - code.count(b")")
            end += 1
            if depth <= 0 and not code.endswith(b"\\"):
                break
        binds = _binds(b"\n".join(lines[k:end]), package)
        if binds is not None:
            found.append((k, end, binds))
            k = end
        else:
            k += 1
    return found


def _binds(text: bytes, package: list[str] | None = None) -> list[Binding] | None:
    """What the import statement(s) `text` bind, or None where `text` is not only import
    statements `ast` reads; relative ones from `package` (package_of)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if not tree.body:
        return None
    binds: list[Binding] = []
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            return None
        binds += _node_binds(node, package)
    return binds


def _node_binds(node: ast.Import | ast.ImportFrom, package: list[str] | None = None
                ) -> list[Binding]:
    binds: list[Binding] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                binds.append((alias.asname, alias.name))
            elif "." in alias.name:
                # `import a.b.c` binds `a`, the package, and loads `a.b.c` under it: the same
                # only as another `import a.b.c`.
                binds.append((alias.name.split(".")[0], "import " + alias.name))
            else:
                binds.append((alias.name, alias.name))
        return binds
    # (`from . import c` is `.c`, `from .m import c` `.m.c`: relative to the same file, and
    # in a known package the absolute name it resolves to; one that climbs above the
    # package's top is left relative.)
    module = "." * node.level + (node.module or "")
    if node.level and package is not None and node.level <= len(package):
        module = ".".join(package[:len(package) - node.level + 1] +
                          ([node.module] if node.module else []))
    for alias in node.names:
        full = f"{module}{'' if module.endswith('.') or not module else '.'}{alias.name}"
        binds.append((alias.asname or alias.name, full))
    return binds


def bindings(content: bytes, path: str | None = None) -> Counter:
    """(name, what it is) of each name the module-level import statements of `content` (a
    Python file, at `path` in its repository: its relative imports resolved from its package,
    package_of) bind, and how many of them bind it so: the statements of the module's body,
    where `ast` reads the file (an import in a docstring's example is none), else each
    statement read alone (a file of syntax newer than this Python's)."""
    package = package_of(path)
    try:
        body = ast.parse(content).body
    except (SyntaxError, ValueError):
        return Counter(bind for _, _, binds in _statements(content.split(b"\n"), package)
                       for bind in binds)
    return Counter(bind for node in body if isinstance(node, (ast.Import, ast.ImportFrom))
                   for bind in _node_binds(node, package))


def hunk_imports(hunk, path: str | None = None) -> tuple[set[Binding], set[Binding]] | None:
    """(what the hunk's added lines make its import statements bind that they did not, what
    its removed lines made them bind that they no longer do), where every line the hunk adds
    or removes is a blank line or in a module-level import statement of its post-image (or
    pre-image) and it adds a binding; else None (code the hunk changes, or an import statement
    its context cuts). `path`: the file's, its relative imports resolved from its package
    (package_of)."""
    from patchforge.apply.diffparse import line_content, line_kind

    new: list[bytes] = []
    old: list[bytes] = []
    added: list[int] = []  # places in `new`
    removed: list[int] = []  # places in `old`
    for line in hunk.lines:
        kind, text = line_kind(line), line_content(line).rstrip(b"\r\n")
        if kind in (b" ", b"+"):
            if kind == b"+" and text.strip():
                added.append(len(new))
            new.append(text)
        if kind in (b" ", b"-"):
            if kind == b"-" and text.strip():
                removed.append(len(old))
            old.append(text)
    package = package_of(path)
    made, was = _statements(new, package), _statements(old, package)
    for places, statements in ((added, made), (removed, was)):
        if not all(any(first <= at < end for first, end, _ in statements) for at in places):
            return None
    now = {bind for _, _, binds in made for bind in binds}
    before = {bind for _, _, binds in was for bind in binds}
    if not now - before:
        return None
    return now - before, before - now
