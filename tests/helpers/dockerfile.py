"""A Dockerfile's COPY steps read back the way BuildKit reads them (moby/buildkit, the Dockerfile
frontend), so a test can say which file of the build context lands at which path of the image.

BuildKit takes a COPY's words in three steps, each ported here from its source:
1. the JSON form `COPY [--flag...] ["src", ..., "dest"]` is decoded as JSON
   (`frontend/dockerfile/parser/line_parsers.go`, `parseJSON`);
2. every word, JSON form too, goes through the shell lexer with the build's environment
   (`frontend/dockerfile/shell/lex.go`, `ProcessWord`, called from `dispatch` in
   `dockerfile2llb/convert.go`): `\\X` is X, `$NAME` and `${NAME}` expand, quotes are removed;
3. each source is a wildcard pattern when a path component holds an unescaped `*`, `?` or `[`
   (`tonistiigi/fsutil/copy/copy.go`, `ResolveWildcards`): the components before it are taken
   literally, the rest matched with Go's `filepath.Match`, and a pattern that matches nothing
   copies nothing, without an error (`AllowEmptyWildcard` in `dockerfile2llb/convert_copy.go`).
A word this port does not cover (a `${NAME:-x}` modifier) fails the test rather than guess.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from dockerfile_parse import DockerfileParser


def copy_steps(dockerfile: Path, context: Path, env: dict[str, str]) -> list[tuple[dict, list[str], str]]:
    """Each COPY of `dockerfile` as (flags, the context files it copies, its destination)."""
    parser = DockerfileParser(path=str(dockerfile.parent), fileobj=None)
    parser.content = dockerfile.read_text(encoding="utf-8")
    steps = []
    for item in parser.structure:
        if item["instruction"] != "COPY":
            continue
        rest = item["value"]
        flags = {}
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            key, _, value = flag[2:].partition("=")
            flags[key] = process_word(value, env)
        words = json.loads(rest) if rest.lstrip().startswith("[") else rest.split()
        words = [process_word(word, env) for word in words]
        sources = [match for word in words[:-1] for match in resolve_wildcards(context, word)]
        steps.append((flags, sources, words[-1]))
    return steps


def process_word(word: str, env: dict[str, str]) -> str:
    """`shell.Lex.ProcessWord` with the escape token `\\`, quotes processed."""
    lexer = _Lexer(word, env)
    return lexer.until(None)


class _Lexer:
    def __init__(self, text: str, env: dict[str, str]):
        self.text, self.pos, self.env = text, 0, env

    def peek(self) -> str | None:
        return self.text[self.pos] if self.pos < len(self.text) else None

    def next(self) -> str | None:
        ch = self.peek()
        self.pos += ch is not None
        return ch

    def until(self, stop: str | None) -> str:  # processStopOn
        out = []
        while self.peek() is not None:
            ch = self.peek()
            if stop is not None and ch == stop:
                self.next()
                return "".join(out)
            if ch == "$":
                out.append(self.dollar())
            elif ch == "'":
                out.append(self.single_quote())
            elif ch == '"':
                out.append(self.double_quote())
            else:  # '<' (a possible heredoc) gives itself back: not special here
                ch = self.next()
                if ch == "\\":
                    ch = self.next()
                    if ch is None:
                        break
                out.append(ch)
        if stop is not None:
            raise ValueError(f"unexpected end of statement looking for {stop!r}")
        return "".join(out)

    def single_quote(self) -> str:
        self.next()
        out = []
        while True:
            ch = self.next()
            if ch is None:
                raise ValueError("unexpected end of statement looking for a single quote")
            if ch == "'":
                return "".join(out)
            out.append(ch)

    def double_quote(self) -> str:
        self.next()
        out = []
        while True:
            ch = self.peek()
            if ch is None:
                raise ValueError("unexpected end of statement looking for a double quote")
            if ch == '"':
                self.next()
                return "".join(out)
            if ch == "$":
                out.append(self.dollar())
                continue
            ch = self.next()
            if ch == "\\":
                if self.peek() is None:
                    continue
                if self.peek() in ('"', "$", "\\"):
                    ch = self.next()
            out.append(ch)

    def dollar(self) -> str:
        self.next()
        if self.peek() != "{":
            name = self.name()
            return "$" if name == "" else self.env.get(name, "")
        self.next()
        if self.peek() in (None, "{", "}", ":"):
            raise ValueError("bad substitution")
        name = self.name()
        if self.next() != "}":
            raise NotImplementedError(f"a ${{{name}...}} modifier in {self.text!r}")
        return self.env.get(name, "")

    def name(self) -> str:  # processName
        ch = self.peek()
        if ch is not None and ch.isdigit():
            start = self.pos
            while self.peek() is not None and self.peek().isdigit():
                self.next()
            return self.text[start:self.pos]
        if ch is not None and ch in "@*#?-$!0":
            return self.next()
        start = self.pos
        while self.peek() is not None and (self.peek().isalnum() or self.peek() == "_"):
            self.next()
        return self.text[start:self.pos]


def contains_wildcards(component: str) -> bool:
    i = 0
    while i < len(component):
        if component[i] == "\\":
            i += 2
            continue
        if component[i] in "*?[":
            return True
        i += 1
    return False


def resolve_wildcards(context: Path, source: str) -> list[str]:
    """`copy.ResolveWildcards`: the context files (relative paths) a COPY source names."""
    parts = [p for p in source.strip("/").split("/") if p not in ("", ".")]
    first = next((i for i, p in enumerate(parts) if contains_wildcards(p)), None)
    if first is None:
        return ["/".join(parts)]
    base = context.joinpath(*parts[:first])
    pattern = go_match_regex("/".join(parts[first:]))
    found = []
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base).as_posix()
        if pattern.fullmatch(rel):
            found.append(path.relative_to(context).as_posix())
    return found


def go_match_regex(pattern: str) -> re.Pattern:
    """Go's `filepath.Match` pattern (Unix) as a regular expression over relative paths."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "\\":
            if i + 1 == len(pattern):
                raise ValueError(f"bad pattern {pattern!r}")
            i += 1
            out.append(re.escape(pattern[i]))
        elif ch == "[":
            i += 1
            negate = i < len(pattern) and pattern[i] == "^"
            i += negate
            members = []
            while True:
                if i >= len(pattern):
                    raise ValueError(f"bad pattern {pattern!r}")
                if pattern[i] == "]" and members:
                    break
                lo, i = _class_char(pattern, i)
                if i < len(pattern) and pattern[i] == "-":
                    hi, i = _class_char(pattern, i + 1)
                    members.append(f"{re.escape(lo)}-{re.escape(hi)}")
                else:
                    members.append(re.escape(lo))
            out.append(("[^" if negate else "[") + "".join(members) + "]")
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _class_char(pattern: str, i: int) -> tuple[str, int]:  # getEsc
    if i >= len(pattern) or pattern[i] in "-]":
        raise ValueError(f"bad pattern {pattern!r}")
    if pattern[i] == "\\":
        i += 1
        if i >= len(pattern):
            raise ValueError(f"bad pattern {pattern!r}")
    return pattern[i], i + 1
