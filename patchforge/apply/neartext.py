"""Code read the way a formatter leaves it the same (near text), and a fix's added lines that a
file already has near where the fix goes (`doubled_near`).

A formatter run re-wraps a call, turns `'` into `"`, writes `0` as `0.0`, adds a trailing
comma, wraps a long condition in parentheses; upstream taking a fix its own way does the same.
Compared as near text (near_lines: no whitespace, one quote, one number spelling, no trailing
comma, no parentheses black adds around a condition or right-hand side) such code reads
alike, and a run of added lines is found from a line's start to a line's end, never inside
another statement (NearText). Landed detection's kept-fix rules (reverts.py) read moves this
way; the judge reads a fix about to be carried onto a file upstream changed this way, so that
a fix whose lines upstream added by itself a line or a few away is not put in a second time.
"""
from __future__ import annotations

import re
from itertools import accumulate
from typing import TYPE_CHECKING

from patchforge.patterns import on_first_use

if TYPE_CHECKING:
    from collections.abc import Callable

    from patchforge.apply.diffparse import FilePatch

# A number with a fraction ending in zeros (`1.50`, `0.0`), not inside a name or a longer
# number: its first digit, then what is left of it checked (the regular expression engine looks
# for a pattern that begins with a character class by that class in C; one that begins with a
# look-behind it tries at every byte of the file).
_NUMBER = on_first_use(rb"(\d(?<![\w.]\d)\d*)\.(\d*?)0+(?![\w.])")
_TRAILING_COMMA = on_first_use(rb",(?=[)\]}])")


def near_lines(lines) -> list[bytes]:
    """Each line as code that a formatter re-wrapped or re-spelled reads the same, the empty
    ones left out: number spelling (`0.0` as `0`, `1.50` as `1.5`), quotes (`'` as `"`), no
    whitespace, no comma before a closing bracket (black's trailing comma, also at a line's
    end before a line that closes), and without the parentheses black puts around a
    condition or a right-hand side too long for its line (`if (` ... `):`, `x = (` ... `)`:
    _wrapping)."""
    return _near_numbered(b"\n".join(lines))[1]


def _near_numbered(content: bytes) -> tuple[list[int], list[bytes]]:
    """The index of each line of `content` that is not empty read as near_lines reads it,
    and that text. (Each step is one pass in C over the whole text, but for the lines that
    end in `(`: this reads every line of each file a kept fix's hunk is looked for in.)"""
    raw = content.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    every = _TRAILING_COMMA.sub(b"", _NUMBER.sub(_number_spelling, raw).replace(
        b"'", b'"').translate(None, _SPACES)).split(b"\n")
    numbers = [k for k, text in enumerate(every) if text]
    joined = _CLOSED_AFTER_COMMA.sub(b"", b"\n".join(every[k] for k in numbers))
    wraps = _wrapping(raw.split(b"\n"), numbers, joined) if b"(\n" in joined + b"\n" \
        else None
    if wraps:
        # (An opener keeps its statement, `if` or `x=`; a closer its `:` or what follows.)
        texts = [text[:-1] if k in wraps else text[1:] if -k - 1 in wraps else text
                 for k, text in zip(numbers, joined.split(b"\n"))]
        kept = [at for at, text in enumerate(texts) if text]
        return [numbers[at] for at in kept], [texts[at] for at in kept]
    return numbers, joined.split(b"\n") if numbers else []


def _number_spelling(m) -> bytes:
    return m[1] + (b"." + m[2] if m[2] else b"")


_CLOSED_AFTER_COMMA = on_first_use(rb",(?=\n[)\]}])")
# What bytes.split() takes for whitespace, but the line ends.
_SPACES = b" \t\x0b\x0c"
_OPENS = on_first_use(rb"\($", re.MULTILINE)
# Where black makes its invisible parentheses visible (the statement's own, never one inside
# an expression: `not (a or b)` is code): after `if`, `elif`, `while`, `return`, `assert`,
# `del`, `with`, `yield`, `await` alone on the line, a `for`'s `in`, an `import`, an `=`.
_WRAP_KEYWORDS = frozenset((b"if", b"elif", b"while", b"return", b"assert", b"del", b"with",
                            b"yield", b"await"))
_WRAP_FOR = on_first_use(rb"\s*(?:for\b.*\bin|from\b.*\bimport)\s*\(\s*$")


def _opens_wrap(text: bytes, line: bytes) -> bool:
    """Whether a line (`text`: as _near_numbered reads it, ending in `(`) opens parentheses
    black put around a statement's condition or right-hand side."""
    head = text[:-1]
    if head in _WRAP_KEYWORDS:
        return True
    if head.endswith(b"="):
        return head[-2:-1] not in (b"=", b"!", b"<", b">")
    return (head.startswith(b"for") and head.endswith(b"in") or
            head.startswith(b"from") and head.endswith(b"import")) and \
        _WRAP_FOR.match(line) is not None


_STRINGS = on_first_use(rb"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|#.*")
# Lines scanned for the `)` of an opener: black wraps a condition or an expression, never a
# block; past this many the parenthesis is taken as written.
_WRAP_SPAN = 60


def _wrapping(lines, numbers: list[int], joined: bytes) -> set[int]:
    """The parentheses black adds around a condition or right-hand side too long for its
    line, in `lines` read as _near_numbered reads them (`numbers`, `joined`: the texts not
    empty, a line each): the index of each opener (a line ending in `(` after `=` or a
    keyword: `if (`, `x = (`, `return (`), and -1 - the index of its closer (the line where
    that parenthesis closes, beginning with it: `)`, `):`, `), msg`). A parenthesis that
    closes within a line, or whose closer is followed by more of the expression
    (`).strip()`), is code, kept."""
    wraps: set[int] = set()
    texts: list[bytes] | None = None
    at = last = 0
    for found in _OPENS.finditer(joined):
        at, last = at + joined.count(b"\n", last, found.start()), found.start()
        texts = joined.split(b"\n") if texts is None else texts
        if not _opens_wrap(texts[at], lines[numbers[at]]):
            continue
        depth = 1
        for m in range(at + 1, min(at + 1 + _WRAP_SPAN, len(texts))):
            after = texts[m]
            if depth == 1 and after[:1] == b")":
                if after in (b")", b"):") or after[:2] == b"),":
                    wraps.update((numbers[at], -numbers[m] - 1))
                break
            code = lines[numbers[m]]
            if b'"' in code or b"'" in code or b"#" in code:
                code = _STRINGS.sub(b"", code)
            depth += code.count(b"(") - code.count(b")")
            if depth <= 0:
                break
    return wraps


class NearText:
    """A file's near_lines as one text, and where its lines begin and end in it: a run of
    code is counted only from a line's start to a line's end (a re-wrap moves code across
    lines, never into the middle of another statement: `str(activation),` is not the
    `(str(activation),)` of another line)."""

    def __init__(self, content: bytes) -> None:
        numbers, texts = _near_numbered(content)
        self.flat = b"".join(texts)
        at = list(accumulate(map(len, texts), initial=0))
        self.starts = dict(zip(at, numbers))  # where a line begins in `flat` -> its index
        self.ends = set(at[1:])
        self.at = at

    def _found(self, run: bytes):
        """Where `run` is in the text from a line's start to a line's end (a GAP run: where
        its head is, its tail beginning at most GAP_LINES lines after the head's end)."""
        if GAP in run:
            from bisect import bisect_left

            head, tail = run.split(GAP, 1)
            for at in self._found(head):
                k = bisect_left(self.at, at + len(head))
                if any(self.flat.startswith(tail, start) and start + len(tail) in self.ends
                       for start in self.at[k:k + GAP_LINES + 1]):
                    yield at
            return
        at = self.flat.find(run)
        while at >= 0:
            if at in self.starts and at + len(run) in self.ends:
                yield at
            at = self.flat.find(run, at + 1)

    def count(self, run: bytes) -> int:
        """How many times `run` is in the text from a line's start to a line's end."""
        return sum(1 for _ in self._found(run))

    def lines_at(self, run: bytes) -> list[int]:
        """The lines (from 1) of the file where `run` begins, as count finds it."""
        return [self.starts[at] + 1 for at in self._found(run)]

    def lines_of(self, run: bytes) -> list[int]:
        """lines_at of each of the run's spellings (`spellings`), in file order."""
        return sorted(line for spelled in spellings(run) for line in self.lines_at(spelled))


def spellings(run: bytes) -> tuple[bytes, ...]:
    """A run's near text, and for an `if` whose whole body is one statement (`if(C)S;`) the
    same with that body in braces, or out of them (`if(C){S;}`): C and C++ formatters write one
    for the other (clang-format's InsertBraces, RemoveBracesLLVM), as black wraps a condition.
    A run that may be an item of a list, dict or call is read with a comma after it and
    without: near text takes the comma off the last item only, before the closing bracket, so
    an item added last and the same item added in the middle read otherwise (_item_spellings)."""
    if not run.startswith(b"if(") or not run.endswith((b";", b";}")):
        return _item_spellings(run)
    depth = 0
    for at in range(2, len(run)):
        depth += {40: 1, 41: -1}.get(run[at], 0)
        if depth == 0:
            break
    head, body = run[:at + 1], run[at + 1:]
    braced = body[:1] == b"{" and body[-1:] == b"}"
    inner = body[1:-1] if braced else body
    if depth or not inner or b"{" in inner or b"}" in inner or inner.count(b";") != 1:
        return (run,)
    return (run, head + inner) if braced else (run, head + b"{" + inner + b"}")


# How a line ends that no item of a list, dict or call ends with: a block's `:` or `{`, a
# statement's `;`, a bracket left open.
_NO_ITEM_END = (b":", b";", b"{", b"(", b"[")


def _item_spellings(run: bytes) -> tuple[bytes, ...]:
    """`run`, and the same with its comma at the end taken off or put on, where it can end an
    item: `"gfx1151":{"fp8":fp8}` as the last item of a dict and `"gfx1151":{"fp8":fp8},` in
    the middle of it are one entry."""
    if run.endswith(b","):
        return (run, run[:-1])
    if run.endswith(_NO_ITEM_END):
        return (run,)
    return (run, run + b",")


def near_runs(hunk, kind: bytes = b"+") -> list[bytes]:
    """Each run of consecutive lines a hunk adds (`kind` "-": removes) as one text of its
    near_lines, the runs of 4 bytes or more: a re-wrap moves code across lines, never out of
    its run. The line after a run decides its last comma, as it does in the file."""
    return [text for _, text, _ in _placed_runs(hunk, kind)]


def _placed_runs(hunk, kind: bytes) -> list[tuple[int, bytes, list[bytes]]]:
    """near_runs' runs, each with the index in `hunk.lines` of its first line and its lines
    as written."""
    from patchforge.apply.diffparse import line_content, line_kind

    runs: list[list[bytes]] = [[]]
    firsts: list[int] = []
    ends: list[bytes] = []
    for at, line in enumerate(hunk.lines):
        if line_kind(line) == kind:
            if not runs[-1]:
                firsts.append(at)
            runs[-1].append(line_content(line))
        elif runs[-1]:
            ends.append(line_content(line))
            runs.append([])
    found = []
    for k, run in enumerate(runs[:len(firsts)]):
        lines = near_lines(run + ends[k:k + 1])
        text = b"".join(lines[:len(near_lines(run))])
        if len(text) >= 4:
            found.append((firsts[k], text, run))
    return found


def replacing_runs(hunk) -> list[tuple[bytes, list[bytes]]]:
    """Each run of lines the hunk adds (near_runs), with the runs of lines it removes in the
    same change (the lines between two context lines: what the added run replaces, read as
    near_runs reads them); [] for a run the hunk adds alone, among context (a new guard). A run
    that replaces lines yet begins or ends with lines like none it removes (a guard added right
    above the call the fix changes) gives those lines too, as a run added alone (_new_parts)."""
    return [(text, removed) for text, _, removed in _added_runs(hunk)]


def _added_runs(hunk) -> list[tuple[bytes, list[bytes], list[bytes]]]:
    """replacing_runs' runs, each as (near text, its lines as written, the removed runs)."""
    from patchforge.apply.diffparse import line_kind

    change = []  # the number of the change (lines between context lines) each line is in
    number = 0
    for line in hunk.lines:
        if line_kind(line) == b" ":
            number += 1
        change.append(number)
    removed: dict[int, list[bytes]] = {}
    old_lines: dict[int, list[bytes]] = {}
    for at, text, lines in _placed_runs(hunk, b"-"):
        removed.setdefault(change[at], []).append(text)
        old_lines.setdefault(change[at], []).extend(lines)
    found = []
    for at, text, lines in _placed_runs(hunk, b"+"):
        found.append((text, lines, removed.get(change[at], [])))
        if change[at] in removed:
            found.extend((b"".join(near_lines(part)), part, [])
                         for part in _new_parts(lines, old_lines[change[at]]))
    # A guard inside a longer run added alone (a comment line above it, a second guard beside
    # it) is read on its own as well: upstream adding that guard alone, its own way, a line
    # lower, is the fix made twice all the same.
    alone = [lines for text, lines, was in found if not was]
    found.extend((b"".join(near_lines(part)), part, []) for lines in alone
                 for part in _guards_within(lines))
    # A guard opening a new block of the run is read with the block's header also where
    # upstream's same block has a line or a few between the header and the guard (a GAP run).
    found.extend((b"".join(near_lines(head)) + GAP + b"".join(near_lines(guard)), head + guard,
                  []) for lines in alone for head, guard in _headed_guards(lines))
    return [run for run in found if len(run[0]) >= 4]


# Between the header and the guard of a GAP run (_headed_guards): NearText reads the guard as
# following the header within GAP_LINES lines. (No line of code holds a NUL byte.)
GAP = b"\0"
GAP_LINES = 3


def _headed_guards(lines: list[bytes]) -> list[tuple[list[bytes], list[bytes]]]:
    """The whole guards among `lines` (as _guards_within finds them) that a block the run
    opens holds, each as (the lines that open the block: its header, and a lone `{` under
    it, the guard's lines)."""
    found, at = [], 0
    while at < len(lines):
        end = _guard_end(lines, at)
        if end is None:
            at += 1
            continue
        header = _block_opened(lines[:at], lines[at])
        if header is not None:
            opened = header + 1 if header + 1 < at and \
                STRING_OR_COMMENT.sub(b"", lines[header + 1]).strip() == b"{" else header
            found.append((lines[header:opened + 1], lines[at:end]))
        at = end
    return found


def block_runs(fp: FilePatch) -> set[bytes]:
    """The runs telling_runs reads of a new block of `fp` by its header and the guard that
    begins its body (_guards_within's read from a header, _headed_guards' GAP runs): upstream's
    block under the same header with the same check is the fix's made again only where it
    does what the fix's body does too (the doubling check asks that of the file)."""
    return {text for hunk in fp.hunks for text, lines, was in _added_runs(hunk)
            if not was and (GAP in text or _header_and_guard(lines))}


def _header_and_guard(lines: list[bytes]) -> bool:
    """Whether `lines` (as written) are a block's header (and a lone `{` under it) and one
    whole guard after it."""
    if len(lines) < 2 or is_guard(lines):
        return False
    after = 2 if len(lines) > 2 and STRING_OR_COMMENT.sub(b"", lines[1]).strip() == b"{" else 1
    return is_guard(lines[after:]) and _block_opened(lines[:after], lines[after]) == 0


def _guards_within(lines: list[bytes]) -> list[list[bytes]]:
    """The whole guards among `lines`, a run of added lines as written, each the fewest lines
    that make one (is_guard) with its brackets closed, but the run itself: a guard with a
    comment line above it, or a statement after it (`if x is None:` + `return None` +
    `y = x.contiguous()`, which the Python guard pattern reads on through as one guard)."""
    found, at = [], 0
    while at < len(lines):
        end = _guard_end(lines, at)
        if end is None:
            at += 1
        else:
            header = _block_opened(lines[:at], lines[at])
            # A guard inside a block the run opens is read with the block's header, from it
            # on: under another header upstream's same guard is another check; under the
            # same header it is the fix's new block made again.
            start = at if header is None else header
            if end - start < len(lines):
                found.append(lines[start:end])
            at = end
    return found


def _guard_end(lines: list[bytes], at: int) -> int | None:
    """Where the fewest lines from `at` that make one whole guard (is_guard, its brackets
    closed) end, or None where no guard of at most _GUARD_LINES lines starts there."""
    return next((end for end in range(at + 1, min(at + _GUARD_LINES, len(lines)) + 1)
                 if is_guard(lines[at:end]) and sum(map(_bracket_depth, lines[at:end])) == 0),
                None)


def _block_opened(before: list[bytes], line: bytes) -> int | None:
    """The index in `before` of the line that opens the block `line` lies in, where the lines
    `before` it in the same added run open one (a new loop's `for (...) {`, or a Python
    `for ...:` it is indented under); None where the run opens no block holding it."""
    code = [STRING_OR_COMMENT.sub(b"", text) for text in before]
    depth = 0
    for k in range(len(code) - 1, -1, -1):
        depth += code[k].count(b"}") - code[k].count(b"{")
        if depth < 0:
            # A lone `{` (Allman's style) is opened by the line above it, the loop's header.
            return k - 1 if code[k].strip() == b"{" and k > 0 else k
    indent = len(line) - len(line.lstrip())
    for k in range(len(code) - 1, -1, -1):
        text = code[k]
        if not text.strip():
            continue
        # The nearest line of the run less indented than the guard is what holds it.
        if len(text) - len(text.lstrip()) < indent:
            return k if text.rstrip().endswith(b":") else None
    return None


# How alike (difflib's ratio of near text) an added line must be to a removed one to be taken
# for its change (`launch(b)` -> `launch(b, stream=stream)`), not a line added beside it.
_CHANGED_LINE_RATIO = 0.6


def _new_parts(lines: list[bytes], old: list[bytes]) -> list[list[bytes]]:
    """The first and the last lines of an added run (`lines`, as written) that are like none of
    the lines its change removes (`old`): lines added beside the changed ones. None where no
    line of the run is like a removed one (the run replaces them whole)."""
    import difflib

    olds = [text for text in (b"".join(near_lines([line])) for line in old) if text]
    new = [not any(difflib.SequenceMatcher(None, b"".join(near_lines([line])), o).ratio()
                   >= _CHANGED_LINE_RATIO for o in olds) for line in lines]
    if all(new) or not any(new):
        return []
    first = new.index(False)
    last = len(new) - new[::-1].index(False)
    # Lines that go on with the last changed line (a call black wrapped: `launch(`, `b4,`,
    # `stream=s,`, `)`) are that change, up to the bracket that closes what it opened.
    depth = 0
    while last <= len(lines):
        depth += _bracket_depth(lines[last - 1])
        if depth <= 0 or last == len(lines):
            break
        last += 1
    return [part for part in (lines[:first], lines[last:]) if part]


# A string literal or a line's comment: its brackets and words are not the code's.
STRING_OR_COMMENT = on_first_use(rb'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|#.*|//.*')


# What opens a text a line may leave open (past_open_text): a Python string's triple
# quotes, a C block comment's `/*`; another string, and a line comment, which end on the line.
_OPENS_TEXT = on_first_use(rb"""(\"\"\"|'''|/\*)|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|(#|//)""")


def past_open_text(line: bytes, open_text: bytes | None, c_family: bool
                   ) -> tuple[bytes, bytes | None]:
    """The code of `line` outside a text opened on an earlier line and still open
    (`open_text`: what closes it, `*/` or the quotes), and what closes a text it leaves open
    (None where none): a C block comment over lines (`/*` + `if (!x) return 0;` + `*/`), a
    Python string over lines (a docstring, `src = \"\"\"` ...); such a string reads as
    `""` where it opens, a comment as nothing."""
    code = b""
    at = 0
    if open_text is not None:
        end = line.find(open_text)
        if end < 0:
            return b"", open_text
        at = end + len(open_text)
    scan = at
    while True:
        found = _OPENS_TEXT.search(line, scan)
        if found is None or found.group(2) is not None:
            return code + line[at:], None
        opener = found.group(1)
        if opener is None or (opener == b"/*") != c_family:
            scan = found.end()  # (a string closed on the line, or no opener in this language)
            continue
        closer = b"*/" if opener == b"/*" else opener
        end = line.find(closer, found.end())
        if end < 0:
            return code + line[at:found.start()] + (b'""' if closer != b"*/" else b""), closer
        code += line[at:found.start()] + (b'""' if closer != b"*/" else b" ")
        at = scan = end + len(closer)


# A C preprocessor conditional's line: its word, and the code after it.
C_DIRECTIVE = on_first_use(rb"\s*#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)")
# The `#if` conditions compiled in every build, and in none.
ALWAYS_BUILT = {b"1", b"true"}
NEVER_BUILT = {b"0", b"false"}


def _bracket_depth(line: bytes) -> int:
    """How many round and square brackets `line` opens and leaves open (negative: closes more
    than it opens). Not braces: `if (...) {` opens a block, not a call going on."""
    code = STRING_OR_COMMENT.sub(b"", line)
    return sum(code.count(c) for c in b"([") - sum(code.count(c) for c in b")]")


def near_flat(content: bytes) -> NearFlat:
    """`content` as one text of near_lines' reading without its line ends, nor any round
    bracket: a run's near text is in it (NearFlat) wherever NearText counts it (and may be
    where it does not: a first search, in C, without reading the file line by line)."""
    return NearFlat(_TRAILING_COMMA.sub(b"", _NUMBER.sub(_number_spelling, content).replace(
        b"'", b'"').translate(None, b" \t\n\r\x0b\x0c")).translate(None, b"()"))


class NearFlat:
    """near_flat's text: `run in` it reads the run without round brackets too, so that one
    black's wrapping parentheses left out of NearText's lines (and not of this text, read
    without its lines) is found."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def __contains__(self, run: bytes) -> bool:
        return run.translate(None, b"()") in self.text


# How far (in lines) from where a fix goes a copy of its added lines counts as the fix's own,
# made by upstream: a guard added a line lower, a call re-wrapped where the fix makes it. A copy
# further away is other code that happens to read alike, as often as not.
NEAR_LINES = 10
# The least near text (whitespace aside) a run of added lines must have for its copy nearby to
# say anything: `return None`, `break`, `}`, `else:` are near any place of any file (history's
# MIN_CHANGED_CHARS, the same measure of code that proves something). A guard, an in-place
# update and a short statement that does something (_GUARD, _IN_PLACE, _SHORT_STATEMENT) are
# the exceptions.
MIN_RUN_CHARS = 24
# A run that is one whole guard: an `if` whose whole body leaves (return, continue, break,
# throw, raise, goto), on one line or wrapped, in braces or not: `if (i >= n) return;`,
# `if limit < 0:` + `return None`. Short, yet no line that is near any place: its condition
# names the fix's own values, and a second copy of it upstream added in the fix's function,
# a line or a few away, is the fix made twice (a bounds guard is the commonest kernel fix).
_GUARD = on_first_use(
    rb"if\s*\([^;{}]*\)\s*(\{\s*)?(?:return\b[^;{}]*|continue|break|throw\b[^;{}]*|goto\s+\w+)"
    rb"\s*;\s*(?(1)\})"
    rb"|if\s[^:]*:\s*(?:return\b[^:;]*|continue|break|raise\b[^:;]*)")
# A guard is written on one line, or wrapped: `if (...)`, `{`, `return;`, `}` at most.
_GUARD_LINES = 4


def is_guard(lines: list[bytes]) -> bool:
    """Whether a run of added lines (as written) is one whole guard (_GUARD)."""
    return len(lines) <= _GUARD_LINES and _GUARD.fullmatch(
        b" ".join(line.strip() for line in lines)) is not None


# A statement that changes a tensor in place, in torch's spelling (the method's name ends in
# one `_`: `y.add_(bias)`, `out.mul_(scale);`). Short, yet made twice it is done twice: the
# bias added twice, wrong numbers and no error.
_IN_PLACE = on_first_use(rb"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.[A-Za-z]\w*[A-Za-z0-9]_\s*\(.*\)\s*;?")


def is_in_place(lines: list[bytes]) -> bool:
    """Whether a run of added lines (as written) is one in-place update (_IN_PLACE)."""
    return len(lines) == 1 and _IN_PLACE.fullmatch(lines[0].strip()) is not None


# A short statement that does something each time it runs: a counter stepped (`count += 1`,
# `n++;`, an item `x[i] += n;`), a call made for what it does (`seen.append(name)`, `sync();`),
# a name set from itself (`y = y.contiguous()`, `y = y * 2`). Under MIN_RUN_CHARS, yet made
# twice it is done twice (or stands twice). Not a line near any place: a `return`, a `break`,
# a block's opener or closer, a name set from other names (`n = 0`, `out = None`).
_SHORT_STATEMENT = on_first_use(
    rb"(?:(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\[\]]*\])*)\s*(?:[-+*/%&|^]|<<|>>|\*\*|//)=(?!=)"
    rb"\s*\S.*"
    rb"|(?:\+\+|--)\s*[A-Za-z_]\w*|[A-Za-z_]\w*\s*(?:\+\+|--)"
    rb"|[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*\s*\(.*\)"
    rb"|(?P<set>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*=(?!=)\s*(?P<value>\S.*))\s*;?")
_KEYWORDS = frozenset((b"return", b"if", b"while", b"for", b"switch", b"assert", b"del",
                       b"yield", b"await", b"raise", b"throw", b"sizeof", b"elif", b"not",
                       b"lambda", b"catch", b"with"))
# How far (in lines) from where the fix changes the file upstream's copy of a short statement
# counts: the fix's hunk's own context, as git diff writes it. Further off, a short statement
# is as often another step that happens to read alike.
SHORT_NEAR_LINES = 3


def is_short_statement(lines: list[bytes]) -> bool:
    """Whether a run of added lines (as written) is one short statement that does something
    each time it runs (_SHORT_STATEMENT): read only within SHORT_NEAR_LINES of the fix's change."""
    if len(lines) != 1:
        return False
    code = STRING_OR_COMMENT.sub(b"", lines[0]).strip()
    found = _SHORT_STATEMENT.fullmatch(code)
    if found is None or code.split(b"(")[0].split(b" ")[0] in _KEYWORDS:
        return False
    if found["set"] is not None:
        # A name set from itself: anything else set anew is the same value twice, harmless.
        return re.search(rb"(?<![\w.])" + re.escape(found["set"]) + rb"(?!\w)",
                         found["value"]) is not None
    return True


def short_runs(fp: FilePatch) -> set[bytes]:
    """The runs of telling_runs that count only as a short statement (is_short_statement)."""
    return {text for hunk in fp.hunks for text, lines, _ in _added_runs(hunk)
            if len(text) < MIN_RUN_CHARS and not is_guard(lines) and not is_in_place(lines)
            and is_short_statement(lines)}


def in_place_runs(fp: FilePatch) -> set[bytes]:
    """The runs of telling_runs that count only as an in-place update (is_in_place)."""
    return {text for hunk in fp.hunks for text, lines, _ in _added_runs(hunk)
            if len(text) < MIN_RUN_CHARS and not is_guard(lines) and is_in_place(lines)}


def telling_runs(fp: FilePatch) -> list[bytes]:
    """The runs of lines `fp` adds (near_runs, each whole, and the parts _added_runs reads on
    their own) with MIN_RUN_CHARS of code or more, or one whole guard (is_guard), in-place
    update (is_in_place) or short statement (is_short_statement), but for those its own
    removed lines hold (code the fix moves, or re-wraps itself)."""
    removed = [run for hunk in fp.hunks for run in near_runs(hunk, b"-")]
    return list(dict.fromkeys(text for hunk in fp.hunks for text, lines, _ in _added_runs(hunk)
                              if (len(text) >= MIN_RUN_CHARS or is_guard(lines)
                                  or is_in_place(lines) or is_short_statement(lines))
                              and not any(text in other for other in removed)))


def near_windows(content: bytes, spans: list[tuple[int, int]]) -> list[bytes]:
    """The text of `content` within NEAR_LINES lines of each byte span (start, end), the
    spans' own lines included; windows that meet are one. Found by searching for line ends
    around each span, never by splitting the whole file: a rebase asks this of every fix
    carried onto a file upstream changed."""
    windows: list[list[int]] = []
    for start, end in sorted(spans):
        low = start
        for _ in range(NEAR_LINES + 1):
            if low <= 0:
                low = 0
                break
            low = content.rfind(b"\n", 0, low - 1) + 1
        high = end
        for _ in range(NEAR_LINES + 1):
            found = content.find(b"\n", high)
            if found < 0:
                high = len(content)
                break
            high = found + 1
        if windows and low <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], high)
        else:
            windows.append([low, high])
    return [content[low:high] for low, high in windows]


def line_spans(content: bytes, places: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte spans of `content` for 0-based line places [start, end) (a line diff's)."""
    from patchforge.apply.diffparse import split_lines

    offsets = [0]
    for line in split_lines(content):
        offsets.append(offsets[-1] + len(line))
    last = len(offsets) - 1
    return [(offsets[min(start, last)], offsets[min(max(end, start), last)])
            for start, end in places]


def counts_near(windows: list[bytes], runs: list[bytes]) -> dict[bytes, int]:
    """How many times each run is in the windows, from a line's start to a line's end, spelled
    either way (`spellings`)."""
    texts = [NearText(window) for window in windows]
    return {run: sum(text.count(spelled) for text in texts for spelled in spellings(run))
            for run in runs}


def doubled_near(fp: FilePatch, current: bytes, at: list[tuple[int, int]], base: bytes,
                 made: list[tuple[int, int]], runs: list[bytes] | None = None,
                 taken_out: Callable[[list[bytes]], dict[bytes, int]] | None = None
                 ) -> list[bytes]:
    """The runs of lines `fp` adds (telling_runs) that `current`, the file the fix is carried
    onto, holds near where it goes (`at`: byte spans of `current`) more times than `base`, the
    file the fix was made on, held near where it was made (`made`: byte spans of `base`):
    upstream added them itself, its own way perhaps (near text). Carried in, the file would
    have them twice. `taken_out`, given the runs whose counts even out, says how many of the
    base's copies near its place upstream took out (another function's line dropped while
    upstream wrote its own in the fix's): those are not held against the target's."""
    windows = near_windows(current, at)
    if not windows or not _words_there(fp, b"".join(b"".join(windows).split())):
        return []
    runs = telling_runs(fp) if runs is None else runs
    if not runs:
        return []
    there = counts_near(windows, runs)
    runs = [run for run in runs if there[run]]
    if not runs:
        return []
    was = counts_near(near_windows(base, made), runs)
    evened = [run for run in runs if there[run] <= was[run]]
    gone = taken_out(evened) if evened and taken_out is not None else {}
    return [run for run in runs if there[run] > was[run] - gone.get(run, 0)]


def _words_there(fp: FilePatch, text: bytes) -> bool:
    """Whether some run of lines `fp` adds, or a part of one that may tell on its own
    (_part_there: a guard beside a comment line, a guard added above a changed line naming
    `nullptr`), has each of its words (_WORD) in `text` (code with its whitespace taken out):
    a run whose near text is there has (near text rewrites quotes, numbers, commas and black's
    parentheses, never a letter). Asked first, in C, of every file a rebase carries onto a
    file upstream changed: most have no such run, and no near text is made for them."""
    from patchforge.apply.diffparse import line_content, line_kind

    for hunk in fp.hunks:
        runs: list[list[bytes]] = [[]]  # the change's runs (the lines between context lines)
        replacing = False  # whether the change removes lines too
        for line in [*hunk.lines, b" "]:
            kind = line_kind(line)
            if kind == b"+":
                runs[-1].append(line_content(line))
            elif kind == b"-":
                replacing = True
                if runs[-1]:
                    runs.append([])
            else:
                if any(run and (all(word in text for word in _WORD.findall(b"".join(run))) or
                                _part_there(run, text, replacing)) for run in runs):
                    return True
                runs, replacing = [[]], False
    return False


def _part_there(run: list[bytes], text: bytes, replacing: bool) -> bool:
    """Whether a part of `run` the doubling check reads on its own has each of its words in
    `text`: a stretch of lines whose words are all there that holds a guard (_guards_within),
    or, in a change that removes lines too, that begins or ends the run with MIN_RUN_CHARS of
    code (lines added beside the changed ones, _new_parts)."""
    there = [all(word in text for word in _WORD.findall(line)) for line in run]
    if replacing:
        for part in (run[:there.index(False)] if False in there else run,
                     run[len(there) - there[::-1].index(False):] if False in there else run):
            if len(b"".join(b"".join(part).split())) >= MIN_RUN_CHARS:
                return True
    stretch: list[bytes] = []
    for line, ok in zip([*run, b""], [*there, False]):
        if ok:
            stretch.append(line)
        elif stretch:
            if _GUARD.search(b" ".join(part.strip() for part in stretch)):
                return True
            stretch = []
    return False


# A word of code: what near text never changes (a name, a keyword, a word of a string).
_WORD = on_first_use(rb"[A-Za-z_]{4,}")
