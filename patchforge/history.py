"""Landed evidence from the upstream's history between a pin and a target.

The content checks (detect.py) see only the target's files. Some landings leave no trace there
that can be proved safely: upstream rewrote the fix's lines again later (superseded), edited a
context line between two changes, or has the same code twice in the file. The history still
knows: a commit between base and target made the patch's change. Some traces also mislead: a
landing that a later commit reverted is no longer there, whatever the patch-ids say.

A patch's change, file by file, is its change blocks: each run of removed and added lines
between context lines, whitespace removed (so a reformatted or re-indented backport, and
context that drifted, still match); a block that changes whitespace only is compared whole,
whitespace and all (its change is nothing else). A commit of base..target:
- makes the change when, for every file of the patch, the commit's blocks there are the
  patch's blocks or contain them in order (a squash commit with more in the same file);
- undoes it when its message reverts a commit that made it (`git revert`), or when it reverses
  a block of it that puts old code back (also apart: the fix's lines taken out, the old ones
  written a line lower, wrapped or requoted by a formatter, or in the file the function moved
  to), or reverses the whole change (a hand-made revert; also
  inside larger blocks of its own: a commit re-pointing a whole table at once). A commit
  that only takes out lines the patch added (a lint pass moving an import, a guard a later
  design no longer needs) supersedes the change; it does not undo it.
Walking the commits oldest first, the patch landed when the last such event made the change
(and `taken_out` says which of its added lines a later commit took out: one the target lacks
that none did was lost where the history shows no diff, a merge's resolution; combine keeps it);
`landed_in` is the commit that made it after the last undoing (never a revert). Everything
is computed from one walk of the history between pin and target (judge.HistoryIndex: which
commits change the series' files, and their diffs of a file once a patch asks about it), so
judging a patch costs at most one git process for the files it is the first to ask about.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

from patchforge.model.record import field, record, replace
from patchforge.patterns import on_first_use

if TYPE_CHECKING:
    from collections.abc import Callable

    from patchforge.formats.patchfile import PatchFile

# Too little changed code (whitespace removed) to prove anything by history: `+pass`,
# `-}` could be any commit's change.
MIN_CHANGED_CHARS = 24
# A block reversed later counts as undoing the change when it says something (a blank line
# or a lone `)` moved back proves nothing).
MIN_UNDO_CHARS = 8
WHITESPACE = b" \t\n\r\x0b\x0c"
# The quotes as ints, for `in` tests: a bytes object looks an int's byte up at once, where a
# one-byte bytes needle is first tried as an int and refused with a formatted TypeError
# (about 2,000 instructions a test in Python 3.11: most of the history's quote tests' cost).
DOUBLE_QUOTE, SINGLE_QUOTE = ord('"'), ord("'")

Block = tuple[tuple[bytes, ...], tuple[bytes, ...]]  # (removed lines, added lines)
Blocks = tuple[Block, ...]


def blocks_of_lines(lines) -> Blocks:
    """Change blocks of unified-diff body lines (`@@` lines, context, `-`, `+`, `\\`), their
    lines without whitespace. A block that changes whitespace only keeps its lines whole:
    without whitespace its two sides are the same, and any commit re-indenting or stripping
    those lines would make "the same change" (a Python fix moving a statement into an `if` is
    all whitespace)."""
    blocks: list[Block] = []
    removed: list[bytes] = []
    added: list[bytes] = []

    def close() -> None:
        if removed or added:
            gone, put = tuple(removed), tuple(added)
            old, new = _bare(gone), _bare(put)
            blocks.append((gone, put) if old == new else
                          (_strings_kept(gone, old), _strings_kept(put, new)))
            removed.clear()
            added.clear()

    for line in lines:
        kind = line[:1]
        if kind in (b"-", b"+"):
            # A patch's hunk lines end with their newline, git's diff split at them does not.
            (removed if kind == b"-" else added).append(
                line[1:-1] if line.endswith(b"\n") else line[1:])
        elif kind == b"\\":
            continue  # "\ No newline at end of file": not a line of either side
        else:
            close()
    close()
    return tuple(blocks)


def spaced_blocks_of_lines(lines, opened: Callable[[int], bytes | None] | None = None
                           ) -> Blocks:
    """blocks_of_lines, but a line in a string over lines (opening, closing or inside one:
    Python's triple quotes, C++'s raw `R"(...)"`) keeps the whitespace that is the string's:
    re-wrapped, such a string is another text (`%s:  %d` then `tokens` on the next line, and
    `%s: %d tokens`, are other texts however a formatter wraps them). Where a string opens is
    read from the hunk's own lines (context too), each side's apart, from where the file
    before the change is at each `@@ -N` line (`opened(N)`: what closes the string over lines
    its line N, 1-based, starts inside, `strings_open_at`'s; without it, or at an `@@` with
    no number, outside any string). A commit whose blocks are blocks_of_lines' of a change
    makes it only where these agree too (judge_history's `spaced`)."""
    blocks: list[Block] = []
    removed: list[bytes] = []
    added: list[bytes] = []
    # each removed (added) line's spaced text, or None
    kept: tuple[list[bytes | None], list[bytes | None]] = ([], [])
    old_in = new_in = None  # the quote the string each side is in waits for, None: outside

    def close() -> None:
        if removed or added:
            gone, put = tuple(removed), tuple(added)
            old, new = _bare(gone), _bare(put)
            if old == new:
                blocks.append((gone, put))
            else:
                blocks.append((_spaced(_strings_kept(gone, old), kept[0]),
                               _spaced(_strings_kept(put, new), kept[1])))
            for one in (removed, added, *kept):
                one.clear()

    for line in lines:
        kind = line[:1]
        if kind in (b"-", b"+"):
            text = line[1:-1] if line.endswith(b"\n") else line[1:]
            if kind == b"-":
                old_in, said = over_lines(text, old_in)
                removed.append(text)
                kept[0].append(said)
            else:
                new_in, said = over_lines(text, new_in)
                added.append(text)
                kept[1].append(said)
        elif kind == b"\\":
            continue
        else:
            close()
            if kind == b"@":
                start = _HUNK_START.match(line)
                old_in = new_in = opened(int(start[1])) \
                    if opened is not None and start is not None else None
            else:
                old_in = over_lines(line[1:], old_in)[0]
                new_in = over_lines(line[1:], new_in)[0]
    close()
    return tuple(blocks)


# The old side's first line of a hunk (`@@ -N,M +...`).
_HUNK_START = on_first_use(rb"@@ -(\d+)")


def strings_open_at(lines: list[bytes], stop: int, since: int = 0,
                    waiting: bytes | None = None) -> bytes | None:
    """What closes the string over lines (over_lines') that line `stop` (0-based) of `lines`
    (a whole file split at its line ends, `split(b"\\n")`, read from its top) starts inside,
    None: outside any. `since`, `waiting`: read from line `since` on, which starts inside the
    string that `waiting` closes (what this says of line `since`): each line's answer is the
    one before it read on, so a caller asking of lines further and further down reads each
    line once.

    Only a line that can open such a string (opens_over_lines) while none is open, or that
    holds what the open one waits for, can change the answer, and neither an opening nor a
    closing quote holds a line end: those lines are found by searching the lines' text from
    one to the next (bytes.find), not line by line: each line's three `in` tests were a
    Python call and, before each search, an exception raised and cleared (bytes' `in` tries
    its operand as a byte value first), 14 ms of a `status` of the 300-patch benchmark series
    (62 calls, 7 ms now), 1.4 of a clean 30-patch rebase (0.7 now)."""
    text = b"\n".join(lines[since:stop])
    line, start = since, 0  # the next line to read, and where it starts in `text`
    # Where each opening is next found in `text` (-1: nowhere), each searched for again only
    # once the reading has passed it: one that is not there is not looked for twice.
    ahead = [text.find(opening) for opening in _OPENINGS]
    while True:
        if waiting is None:
            for k, at in enumerate(ahead):
                if 0 <= at < start:
                    ahead[k] = text.find(_OPENINGS[k], start)
            found = min((at for at in ahead if at >= 0), default=-1)
        else:
            found = text.find(waiting, start)
        if found < 0:
            return waiting
        line += text.count(b"\n", start, found)
        waiting = over_lines(lines[line], waiting)[0]
        line += 1
        start = text.find(b"\n", found) + 1
        if not start:  # the last line read
            return waiting


# What can open a string over lines (opens_over_lines).
_OPENINGS = (b"'''", b'"""', b'R"')


def opens_over_lines(line: bytes) -> bool:
    """Whether `line` can open a string over lines (over_lines'): a triple quote, or a C++
    raw string's `R"`. Looked for by `find`, not `in`: bytes' `in` first tries its operand
    as a byte value and formats a TypeError it then drops (about 2,000 instructions a test;
    containment's spaced_literals asks this of every line of each copy it finds)."""
    return line.find(b"'''") >= 0 or line.find(b'"""') >= 0 or line.find(b'R"') >= 0


def file_strings(read: Callable[[], bytes | None]) -> Callable[[int], bytes | None]:
    """spaced_blocks_of_lines' `opened` of the file before a change, read by `read()` when
    first asked (None: not known, each hunk read from outside strings)."""
    held: list[list[bytes] | None] = []

    def opened(start: int) -> bytes | None:
        if not held:
            content = read()
            held.append(content.split(b"\n") if content is not None else None)
        lines = held[0]
        return strings_open_at(lines, max(start - 1, 0)) if lines is not None else None
    return opened


def _spaced(lines: tuple[bytes, ...], said: list[bytes | None]) -> tuple[bytes, ...]:
    """Each of `lines`, or its spaced text (`said`, over_lines') where it has one."""
    return tuple(line if spaced is None else spaced for line, spaced in zip(lines, said))


# Where a string over lines opens: Python's triple quotes, C++'s raw string (`R"x(`, its
# delimiter up to 16 characters, closed by `)x"`).
_OVER_LINES = on_first_use(rb"'''|\"\"\"|R\"([^()\\ \t\"]{0,16})\(")


def over_lines(line: bytes, waiting: bytes | None) -> tuple[bytes | None, bytes | None]:
    """(what closes the string over lines `line` leaves open, None when it leaves none; the
    line with its whitespace kept where it is a string's, None when it touches no such
    string), given what the string open before it waits for (`waiting`)."""
    text = line.rstrip(b"\r\n")
    touched = waiting is not None
    first = waiting
    at = 0
    while True:
        if waiting is not None:
            end = text.find(waiting, at)
            if end < 0:
                break
            at = end + len(waiting)
            waiting = None
        found = _OVER_LINES.search(text, at)
        if found is None:
            break
        touched = True
        waiting = found[0] if found[1] is None else b")" + found[1] + b'"'
        at = found.end()
    if not touched:
        return None, None
    # Whitespace before (after) the string is layout; inside it, the string's own.
    if first is None:
        text = text.lstrip(WHITESPACE)
    if waiting is None:
        text = text.rstrip(WHITESPACE)
    return waiting, text


# A string or character literal on one line, as Python, C, C++ and HIP write it: quotes of one
# kind around anything but that quote, a backslash escaping the next byte.
STRING_LITERAL = on_first_use(rb"(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')")


# What may stand right before a string's opening quote and be one token with it: the string
# prefixes of Python (r, b, f, u and pairs) and C/C++ (L, u, U, u8, R). Any other word right
# before a quote (`don't`, `1'000`) says the quote is no string's.
_STRING_PREFIXES = frozenset((b"r", b"b", b"f", b"u", b"br", b"rb", b"fr", b"rf", b"l", b"u8",
                              b"lr", b"ur", b"u8r"))


def _word_byte(byte: int) -> bool:
    return byte == 95 or 48 <= byte <= 57 or 65 <= byte <= 90 or 97 <= byte <= 122


def string_parts(line: bytes) -> list[bytes] | None:
    """`line` split at its string literals (STRING_LITERAL.split: code, literal, code, ...),
    or None where its quotes cannot be told apart with confidence: an apostrophe in a comment
    (`/* don't */ printf("can't %s:  %d")`) or a digit separator (`1'000`) pairs with a
    string's own quote and makes code of the string's inside. None when a literal's opening
    quote follows a word that is no string prefix, its closing quote runs into a word, or a
    quote is left unpaired before the last literal. Who gets None keeps all the line's
    whitespace: a landing may then be missed, never found where the string differs."""
    parts = STRING_LITERAL.split(line)
    if len(parts) == 1:
        return parts
    position = 0
    for index, part in enumerate(parts):
        if index % 2:
            start, end = position, position + len(part)
            word = start
            while word and _word_byte(line[word - 1]):
                word -= 1
            if word < start and line[word:start].lower() not in _STRING_PREFIXES:
                return None
            if end < len(line) and _word_byte(line[end]):
                return None
        elif index < len(parts) - 1 and (SINGLE_QUOTE in part or DOUBLE_QUOTE in part):
            return None
        position += len(part)
    return parts


def _strings_kept(lines: tuple[bytes, ...],
                  bare: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """`lines` without whitespace (`bare`: without any), but inside their strings: a block
    whose `"scale:  %d"` became `"scale: %d"` (and its quotes double, say) is another change
    than upstream's requoting alone. Blocks are compared as they are (a commit makes the
    change); what compares their lines to other text (a file's, a diff's) takes the rest of
    their whitespace out (`_bare`, `code_of`)."""
    joined = b"".join(bare)  # (one search for each quote, not two a line)
    if DOUBLE_QUOTE not in joined and SINGLE_QUOTE not in joined:
        return bare
    return tuple(_line_code(line) if DOUBLE_QUOTE in plain or SINGLE_QUOTE in plain else plain
                 for line, plain in zip(lines, bare))


def _kept(lines: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """The lines without whitespace but inside their strings (`_line_code`), each."""
    bare = _bare(lines)
    joined = b"".join(bare)
    if DOUBLE_QUOTE not in joined and SINGLE_QUOTE not in joined:
        return bare
    return tuple(_line_code(line) if DOUBLE_QUOTE in plain or SINGLE_QUOTE in plain else plain
                 for line, plain in zip(lines, bare))


@lru_cache(maxsize=1 << 16)
def _line_code(line: bytes) -> bytes:
    """`line` without whitespace but inside its strings (a line with a quote; remembered:
    the undo checks ask the lines of every block of a commit again for each block of the
    change)."""
    parts = string_parts(line)
    if parts is None:  # quotes not told apart: all its whitespace kept, but line ends
        return line.strip(WHITESPACE).translate(None, b"\r\n")
    parts[::2] = [part.translate(None, WHITESPACE) for part in parts[::2]]
    return b"".join(parts)


def _plain(code: bytes) -> bytes:
    """Code (code_of's) without the whitespace it keeps inside strings."""
    return code.translate(None, WHITESPACE)


def blocks_of_file_patch(fp, spaced: bool = False,
                         opened: Callable[[int], bytes | None] | None = None) -> Blocks:
    """The file patch's change blocks (spaced_blocks_of_lines' with `spaced`, `opened` its)."""
    lines: list[bytes] = []
    for hunk in fp.hunks:
        lines.append(b"@@ -%d" % hunk.old_start)
        lines.extend(hunk.lines)
    return spaced_blocks_of_lines(lines, opened) if spaced else blocks_of_lines(lines)


def old_blob(chunk: bytes) -> str | None:
    """The blob one file's `git diff --full-index` (`chunk`) changes, None for a file it
    creates (or a diff without an `index` line)."""
    found = _BINARY_INDEX.search(chunk.split(b"\n@@", 1)[0])
    return None if found is None or found[1] == b"0" * 40 else found[1].decode()


def blocks_of_git_diff(chunk: bytes, spaced: bool = False,
                       opened: Callable[[int], bytes | None] | None = None) -> Blocks:
    """Change blocks of one file's `git diff` (its `diff --git` header and all); a binary
    file's change is its one blob-id block (`binary_block`), read from the `index` line that
    `--full-index` writes. With `spaced`, spaced_blocks_of_lines' (`opened` its)."""
    body = chunk.split(b"\n@@", 1)
    if len(body) < 2:
        binary = _BINARY_INDEX.search(chunk)
        if binary and (b"\nBinary files " in chunk or b"\nGIT binary patch\n" in chunk):
            return binary_block(binary[1].decode(), binary[2].decode())
        return ()
    lines = (b"@@" + body[1]).split(b"\n")
    return spaced_blocks_of_lines(lines, opened) if spaced else blocks_of_lines(lines)


_BINARY_INDEX = on_first_use(rb"\nindex ([0-9a-f]{40})\.\.([0-9a-f]{40})")


def binary_block(old_oid: str, new_oid: str) -> Blocks:
    """A binary file's change as one block: the pre-image blob id removed, the post-image's
    added. A later commit making the reverse block (the post-image back to the pre-image)
    undoes it; one replacing the post-image by a third blob supersedes it, like a rewrite of
    added lines."""
    return (((b"blob:" + old_oid.encode(),), (b"blob:" + new_oid.encode(),)),)


def reverse(blocks: Blocks) -> Blocks:
    return tuple((added, removed) for removed, added in blocks)


def _contains(big: Blocks, small: Blocks) -> bool:
    """Every block of `small` is a block of `big`, in the same order."""
    it = iter(big)
    return all(any(block == other for other in it) for block in small)


def _run_in(small: tuple[bytes, ...], big: tuple[bytes, ...]) -> bool:
    """Whether `small` is a run of consecutive lines of `big`, whitespace ignored (a block
    that changes whitespace only has it, see blocks_of_lines)."""
    return _is_run(_bare(small), _bare(big))


def _is_run(small: tuple[bytes, ...], big: tuple[bytes, ...]) -> bool:
    """Whether `small` is a run of consecutive lines of `big` (both without whitespace)."""
    if not small:
        return True
    n = len(small)
    first = small[0]
    at = -1
    try:
        while True:
            # Only where the run's first line is (the tuple's C search), not at every line.
            at = big.index(first, at + 1)
            if big[at:at + n] == small:
                return True
    except ValueError:
        return False


def _reversed_within(undo: Block, theirs: _Stripped) -> bool:
    """Whether a block of `theirs` holds `undo` (a reversed block of the change, its lines
    without whitespace: the lines the change added, to take out, and the old lines it
    removed, to put back) inside more: it takes those added lines out and puts those old
    lines back, each a run of its sides."""
    gone, back = undo
    return any(_is_run(gone, removed) and _is_run(back, added)
               for removed, added in zip(theirs.removed(), theirs.added()))


class _Stripped:
    """A commit's blocks of a path (`blocks`) and their sides without whitespace, each kind
    made when first asked: judge_history asks them of each block of the change, and each
    side stripped again per block was most of its time."""
    __slots__ = ("blocks", "_removed", "_added", "_lines")

    def __init__(self, blocks: Blocks) -> None:
        self.blocks = blocks
        self._removed: list[tuple[bytes, ...]] | None = None
        self._added: list[tuple[bytes, ...]] | None = None
        self._lines: frozenset[bytes] | None = None

    def removed(self) -> list[tuple[bytes, ...]]:
        if self._removed is None:
            self._removed = [_bare(side) for side, _ in self.blocks]
        return self._removed

    def added(self) -> list[tuple[bytes, ...]]:
        if self._added is None:
            self._added = [_bare(side) for _, side in self.blocks]
        return self._added

    def lines(self) -> frozenset[bytes]:
        """Every line the blocks take out, without whitespace."""
        if self._lines is None:
            self._lines = frozenset().union(*self.removed())
        return self._lines


def _stripped(blocks: Blocks, kept: dict | None) -> _Stripped:
    """_Stripped of `blocks`, the one in `kept` (by the blocks' identity) when it has one."""
    if kept is None:
        return _Stripped(blocks)
    found = kept.get(id(blocks))
    if found is None or found[0] is not blocks:
        found = kept[id(blocks)] = (blocks, _Stripped(blocks))  # (blocks kept: its id stays)
    return found[1]


def code_of(lines) -> bytes:
    """Lines as one text of code, as a formatter leaves it alike: whitespace and line breaks
    out (black wraps a long call over three lines) but inside strings (`"scale:  %d"` is
    another string than `"scale: %d"`, which no formatter makes of it), quotes one kind
    (`'` -> `"`), no comma before a closing bracket (black's magic trailing comma)."""
    return _commas_out(b"".join(_kept(tuple(lines))).replace(b"'", b'"'))


def _codes_of_lines(lines: tuple[bytes, ...]) -> list[bytes]:
    """code_of of each line alone, made over the lines joined by line ends (no comma is
    before a line end's bracket: the substitution stays inside each line)."""
    return _commas_out(b"\n".join(_kept(lines)).replace(b"'", b'"')).split(b"\n") \
        if lines else []


def _commas_out(code: bytes) -> bytes:
    # Most code asked has no comma: a look for one costs less than the substitution's call.
    return _TRAILING_COMMA.sub(rb"\1", code) if b"," in code else code


_TRAILING_COMMA = on_first_use(rb",([)\]}])")


def _code_run_in(code: bytes, lines: tuple[bytes, ...]) -> bool:
    """Whether a run of consecutive whole `lines` is `code` (code_of's text): the lines of a
    block made the same code, wrapped or quoted otherwise. Each line's code is matched once
    per start (a block of thousands of lines, a CSV table, is no join of every run)."""
    # First put_in's one pass over the bytes: such a run, commas all out, is in the lines
    # joined, commas all out.
    if _loose(lines).find(_plain(code).replace(b",", b"")) < 0:  # (not `in`: opens_over_lines)
        return False
    alone = _codes_of_lines(lines)
    # Joined, a line's last comma goes where the next line with code starts with a bracket.
    joined = list(alone)
    after = b""
    for k in range(len(alone) - 1, -1, -1):
        if alone[k].endswith(b",") and after[:1] in (b")", b"]", b"}"):
            joined[k] = alone[k][:-1]
        after = alone[k] or after
    for i, first in enumerate(alone):
        if not first or not code.startswith(joined[i][:1]):
            continue
        at = 0
        for j in range(i, len(alone)):
            if at + len(alone[j]) == len(code) and code.endswith(alone[j]):
                return True  # (the run ends at line j: its comma stays)
            if not code.startswith(joined[j], at):
                break
            at += len(joined[j])
    return False


def _put_back_apart(undo: Block, theirs: Blocks, removed: list[tuple[bytes, ...]],
                    lines: frozenset[bytes], elsewhere=None) -> bool:
    """Whether a commit (its blocks of the path, `theirs`) reverses a block of the change
    (`undo`: the fix's lines to take out, its old ones to put back) as git's diff does not
    show it as that block: the old code wrapped or quoted otherwise, with more code only
    formatted otherwise (a formatter run on a stale tree), or put back apart from where the
    fix's lines are taken out, in another block (one line lower, at the end of the file) or
    (`elsewhere((back, gone))`: the commit's blocks of its other files, asked only then,
    those that can hold the old code or the fix's, code_of's, at least) in the file the
    function moved to. Apart, both net: the fix's code put in again nowhere (a move of the
    fixed code), the old code taken out nowhere (a move of an old twin). The old code among
    more lines of the very block that takes the fix's lines out is that rewrite's own
    (judge_history). The fix's lines are taken out as the landing made them (undo_probes
    says so of a commit's text). `removed`: each block of `theirs`' removed lines without
    whitespace, and `lines` all of them, made once for every block of the change asked
    (_reverses_a_block)."""
    if not undo[0] or not undo[1]:
        return False  # nothing to take out
    fix = _bare(undo[0])
    if fix[0] not in lines:
        return False  # no block of theirs takes the fix's first line out
    if any(line.startswith(b"blob:") for line in undo[0] + undo[1]):
        return False  # a binary file's (_blob_back)
    taking = [k for k, side in enumerate(removed) if _is_run(fix, side)]
    if not taking:
        return False
    gone, back = (code_of(side) for side in undo)
    if not gone or not back or gone == back:
        return False  # no code, or the fix only changed what formatters change
    if any(_reverses_code(gone, back, code_of(theirs[k][0]), code_of(theirs[k][1]))
           for k in taking):
        return True
    if any(_code_run_in(gone, added) or _code_run_in(back, removed)
           for removed, added in theirs):
        return False
    if any(_code_run_in(back, added) for k, (_, added) in enumerate(theirs) if k not in taking):
        return True
    other = elsewhere((back, gone)) if elsewhere is not None else ()
    return put_in(back, other) and not any(_code_run_in(gone, added) for _, added in other)


def _reverses_a_block(blocks: list[Block], stripped: _Stripped, whole: bool,
                      elsewhere, old: frozenset[bytes] = frozenset()) -> bool:
    """Whether a commit's blocks of a path (`stripped`) undo one of `blocks` (the change's
    reversed blocks there large enough to count; one that only takes the fix's lines out only
    when the commit reverses the `whole` change): the block itself (unless the commit only
    moves the change's `old` lines, _moved_only), an old blob written back, or the old code
    put back apart (_put_back_apart)."""
    theirs = stripped.blocks
    for block in blocks:
        if not (block[1] or whole):
            continue
        if (block in theirs and not _moved_only(old, stripped)) or _blob_back(block, theirs):
            return True
        if _put_back_apart(block, theirs, stripped.removed(), stripped.lines(), elsewhere):
            return True
    return False


def _removed_on_balance(blocks: Blocks) -> frozenset[bytes]:
    """The lines (whitespace removed, none empty) that `blocks` take out more often than they
    put in: the old code a change removes, not a line it only moves."""
    out = Counter(line for removed, _ in blocks for line in _bare(removed) if line)
    out.subtract(line for _, added in blocks for line in _bare(added) if line)
    return frozenset(line for line, count in out.items() if count > 0)


def _moved_only(old: frozenset[bytes], theirs: _Stripped) -> bool:
    """Whether a commit's blocks of a path (`theirs`) put some of `old` (the lines a change
    takes out on balance, _removed_on_balance's) in, and each no more often than they take
    it out: the old lines moved with the code around them (a function moved down the file,
    the line the fix deletes in it), none put back where the change took it out. Such a
    commit undoes nothing, though its diff holds the change's reversed blocks (the old line
    added, in the function's new place)."""
    if not old:
        return False
    added = Counter(line for side in theirs.added() for line in side if line in old)
    if not added:
        return False
    removed = Counter(line for side in theirs.removed() for line in side if line in old)
    return all(count <= removed[line] for line, count in added.items())


def _reverses_code(gone: bytes, back: bytes, removed: bytes, added: bytes) -> bool:
    """Whether a block's code (`removed` -> `added`, code_of's) changes `gone` to `back` and
    nothing else: the same code around them on both sides (a formatter's block: the lines
    next to the old ones requoted, say)."""
    at = removed.find(gone)
    while at >= 0:
        if added == removed[:at] + back + removed[at + len(gone):]:
            return True
        at = removed.find(gone, at + 1)
    return False


def taken_out(lines: tuple[bytes, ...], code: bytes, theirs: Blocks) -> bool:
    """Whether a commit's blocks of a file (`theirs`) take `lines` (`code`: code_of them) out
    and put them in again nowhere in it."""
    return any(_run_in(lines, removed) for removed, _ in theirs) and \
        not any(_code_run_in(code, added) for _, added in theirs)


def put_in(code: bytes, theirs: Blocks) -> bool:
    """Whether a commit's blocks of a file (`theirs`) put `code` (code_of's) in, and take it
    out nowhere in it."""
    # First a test that costs one pass over the bytes, and that every run put_in finds passes
    # (commas all out, as code_of takes some of them out): the runs' test matches each line
    # once per start, which over every file of a whole release's commit (a wheel upstream's)
    # cost a second in a 300-patch rebase.
    # (Without whitespace at all: code_of keeps a string's, and a text that holds the code
    # holds it without whitespace.)
    if _loose(b"".join(added) for _, added in theirs).find(
            _plain(code).replace(b",", b"")) < 0:  # (not `in`: opens_over_lines)
        return False
    return any(_code_run_in(code, added) for _, added in theirs) and \
        not any(_code_run_in(code, removed) for removed, _ in theirs)


def _loose(lines) -> bytes:
    """The lines joined as code without whitespace, quotes one kind and no comma at all:
    every run _code_run_in finds, its code without commas, is in it."""
    return loose_code(b"".join(lines))


def loose_code(text: bytes) -> bytes:
    """`text` as put_in's first test reads it: whitespace (line breaks too) and commas out,
    quotes one kind, in one pass. A run of lines put_in finds is code whose commas out are in
    it."""
    return text.translate(_DOUBLE_QUOTES, _LOOSE_OUT)


_DOUBLE_QUOTES = bytes.maketrans(b"'", b'"')
_LOOSE_OUT = WHITESPACE + b","


def loose_code_key() -> str:
    """loose_code as a short name: a digest of what it makes of each byte. A loose text made
    once and kept (judge.HistoryIndex's of a release's files) is read back only under the key
    it was made with, never as another loose_code's. loose_code being one translate, what it
    makes of each byte is the whole of it; a loose_code that is not a map of single bytes must
    change the version here."""
    import hashlib  # here: only a release's kept texts are named by it

    return "1" + hashlib.sha256(loose_code(bytes(range(256)))).hexdigest()[:15]


# A line that says nothing of which code a file holds: an import, a comment, a preprocessor
# line (every file has such), or too little code (`}`, `else:`).
_SAYS_NOTHING = on_first_use(rb"\s*(?:import\s|from\s|#|//|/\*|\*)")
MIN_LINE_CODE = 6
# The share of a file's code (code_lines', in characters) that another file must have for the
# code to live on there, edited: git's rename detection pairs two files alike at half.
MOVED_SHARE = 0.5


def code_lines(lines) -> frozenset[bytes]:
    """The lines of `lines` (whole lines, whitespace as written) that say which code they are,
    as code_of has each: no import, comment or preprocessor line, MIN_LINE_CODE characters
    of code or more."""
    said = tuple(line.rstrip(b"\r\n") for line in lines if not _SAYS_NOTHING.match(line))
    return frozenset(code for code in _codes_of_lines(said) if len(code) >= MIN_LINE_CODE)


def share(code: frozenset[bytes], other: frozenset[bytes]) -> float:
    """How much of `code` (code_lines') `other` has: its lines there, in characters, over all
    of its lines' (0 for no code)."""
    total = sum(map(len, code))
    return sum(map(len, code & other)) / total if total else 0.0


def _blob_back(undo: Block, theirs: Blocks) -> bool:
    """Whether a commit writes a binary file's old blob again (`undo` is the reverse of a
    binary_block), whatever blob it replaced (the kernel rebuilt, then put back)."""
    return bool(undo[1]) and undo[1][0].startswith(b"blob:") and \
        any(added == undo[1] for _, added in theirs)


def _bare(lines: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """The lines without whitespace, each, taken out of them joined: one C loop, not a call
    per line (judge_history asks it of every block of every commit of a file)."""
    joined = b"\n".join(lines)
    if joined.count(b"\n") != len(lines) - 1:  # no line or one with a line end: each alone
        return tuple(line.translate(None, WHITESPACE) for line in lines)
    return tuple(joined.translate(None, _INSIDE_LINES).split(b"\n"))


# Whitespace but the line end: taken out of lines joined by line ends, it leaves each line's
# text without whitespace, and the line ends between them.
_INSIDE_LINES = WHITESPACE.replace(b"\n", b"")


def _size_reaches(blocks: Blocks, least: int) -> bool:
    """Whether the blocks' changed code, whitespace removed, is `least` bytes or more: counted
    line by line up to there (the whole of a patch's blocks was stripped to be compared with
    MIN_CHANGED_CHARS, each block of a fix for MIN_UNDO_CHARS at every history question)."""
    total = 0
    for removed, added in blocks:
        for line in (*removed, *added):
            total += len(line.translate(None, WHITESPACE))
            if total >= least:
                return True
    return total >= least


@record
class HistoryLanding:
    """What the history says of one patch: the commit that made its change last (None when no
    commit did, or the last event undid it), and every event, oldest first."""

    landed_by: str | None
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (commit, made|undid, how)
    # (line, commit): a line the change adds (whitespace removed) and a commit after
    # landed_by that takes it out. Listed after is not made after: a branch forked before the
    # landing and merged later is listed after it too (judge.SeriesJudge._added_code_gone
    # asks whether the commit descends from the landing).
    taken_out: frozenset[tuple[bytes, str]] = frozenset()
    # (path, commit, what it put there): a commit other than those that made the change whose
    # block takes out a line the change removes, with that block's added lines (whitespace
    # removed, joined). One made beside the landing (a branch forked before it) whose lines
    # the target has is a merge's resolution that took the branch's side
    # (judge.SeriesJudge._added_code_gone).
    rewritten: frozenset[tuple[str, str, bytes]] = frozenset()

    @property
    def undone_by(self) -> str | None:
        """The last commit that undid the change, when that is the history's last word."""
        if self.events and self.events[-1][1] == "undid":
            return self.events[-1][0]
        return None

    @property
    def made_since_undo(self) -> list[str]:
        """The commits that made the change after the last one that undid it, oldest first."""
        made: list[str] = []
        for commit, what, _ in self.events:
            made = [] if what == "undid" else made + [commit]
        return made

    @property
    def last_undo(self) -> str | None:
        """The last commit that undid the change (a later one may have made it again)."""
        return next((c for c, what, _ in reversed(self.events) if what == "undid"), None)

    def describe(self) -> list[str]:
        """One line per event, oldest first. A commit that made the change names the first
        later one that undid it: the status table shows a patch's first line of evidence,
        and a landing named alone there (its revert in the next line) was read as landed."""
        said = []
        for k, (commit, what, how) in enumerate(self.events):
            if what == "undid":
                said.append(f"history: commit {commit} undoes this change ({how})")
                continue
            undo = next((later for later, was, _ in self.events[k + 1:] if was == "undid"),
                        None)
            said.append(f"history: commit {commit} makes this change ({how})"
                        + (f", undone by {undo[:12]}" if undo else ""))
        return said


def _whole_file(content: bytes, sign: bytes, spaced: bool = False) -> Blocks:
    """The blocks of a diff that creates (`+`) or deletes (`-`) a file of `content`, as git
    shows them without rename detection."""
    lines = content.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [b"@@", *(sign + line for line in lines)]
    return spaced_blocks_of_lines(lines) if spaced else blocks_of_lines(lines)


def patch_blocks(patch: PatchFile,
                 read_old: Callable[[str], bytes | None] | None = None, spaced: bool = False
                 ) -> dict[str, Blocks] | None:
    """The patch's change blocks per path, or None when history cannot judge it (a mode-only
    file, a copy, a binary rename, or too little changed code). A binary file's block is its
    blob ids. A rename is judged as git's history shows it without rename detection, the old
    file deleted and the new one created: that needs `read_old(path)`, the file before the
    patch (without it, a rename is not judged). With `spaced`, spaced_blocks_of_lines', each
    hunk from where `read_old`'s file is at its start (inside a string over lines or not)."""
    from patchforge.apply.hunks import apply_file_patch

    found: dict[str, Blocks] = {}
    for fp in patch.file_patches:
        if fp.old_path != fp.new_path and fp.old_path is not None and fp.new_path is not None:
            old = read_old(fp.old_path) if read_old is not None and not fp.is_copy \
                and fp.binary is None else None
            if old is None:
                return None
            new = apply_file_patch(old, fp, max_fuzz=0)
            if not new.ok or new.content is None:
                return None
            found[fp.old_path] = _whole_file(old, b"-", spaced)
            found[fp.new_path] = _whole_file(new.content, b"+", spaced)
            continue
        opened = None
        if spaced and read_old is not None and fp.binary is None and fp.old_path is not None \
                and not fp.is_new:
            # (read while this file's blocks are made: the file patch of this turn)
            reader, old_path = read_old, fp.old_path
            opened = file_strings(lambda: reader(old_path))
        blocks = binary_block(fp.binary.old_oid, fp.binary.new_oid) if fp.binary is not None \
            else blocks_of_file_patch(fp, spaced, opened)
        if not blocks and not (fp.is_new or fp.is_delete):
            return None  # a mode change alone: nothing a commit's lines can show
        # (An empty file created or deleted has no blocks: a commit makes that part when it
        # creates or deletes the file, empty, too.)
        found[fp.path] = blocks
    if not found or not _size_reaches(tuple(b for bs in found.values() for b in bs),
                                       MIN_CHANGED_CHARS):
        return None
    return found


def judge_history(wanted: dict[str, Blocks], commits: list[tuple[str, dict[str, Blocks]]],
                  reverts: dict[str, list[str]] | None = None,
                  elsewhere: Callable[[str, list[str], tuple[bytes, bytes]], Blocks]
                  | None = None,
                  spaced: tuple[dict[str, Blocks] | Callable[[], dict[str, Blocks]],
                                Callable[[str], dict[str, Blocks]]] | None = None,
                  kept: dict | None = None) -> HistoryLanding:
    """`commits`: (commit, its blocks per path) of base..target touching the paths, oldest
    first; `reverts`: commit -> the commit ids (maybe abbreviated) its message says it reverts
    ("This reverts commit X", as `git revert` writes); `elsewhere(commit, paths, (old, fix))`:
    the commit's blocks of its files other than `paths` (asked of a commit that takes the fix's
    code out and puts no old code back in the path: did it move the function, old, away?),
    at least every one in which _code_run_in can find `old` or `fix` (code_of's texts of the
    old code and of the fix's) among its added or removed lines: put_in and _code_run_in
    answer of those alone as of them all; or none when no block of them can put `old` in
    (put_in(old, ...) is False then, whatever the blocks). `spaced`: the change's blocks as
    spaced_blocks_of_lines makes them (or what makes them, asked when first needed), and a
    commit's (per path) asked of it: a commit makes
    the change only where those contain the change's too (the whitespace of a string over
    lines is the string's). `kept`: where each commit's blocks' sides without whitespace
    (_Stripped) are kept for the next question over the same history (a dict the caller
    keeps: HistoryIndex asks it of each patch, and the patches on one file meet the same
    commits' blocks).

    Undoing is judged generously and making strictly, so that a doubt costs a landing found,
    never a fix: a commit undoes the change when its message reverts a commit that made it, or
    when it reverses any one block of it (a partial or hand-edited revert), or the whole
    change inside larger blocks of its own."""
    events: list[tuple[str, str, str]] = []
    made: list[str] = []
    # What undoing each file's change looks like, and the blocks of it large enough to count,
    # made once, not for each commit of the history.
    undo = {path: reverse(blocks) for path, blocks in wanted.items()}
    large = {path: [b for b in blocks if _size_reaches((b,), MIN_UNDO_CHARS)]
             for path, blocks in undo.items()}
    # The whole change reversed within larger blocks (below) counts only when a block large
    # enough to count puts old lines back; the reversed blocks' lines without whitespace.
    puts_back = any(b[1] for blocks in large.values() for b in blocks)
    bare_undo = {path: [(_bare(gone), _bare(back)) for gone, back in blocks]
                 for path, blocks in undo.items()} if puts_back else {}
    # The old lines each file's change takes out (not those it only moves): a commit that
    # puts them in only where it takes them out as often (_moved_only) puts none back.
    old_lines = {path: _removed_on_balance(blocks) for path, blocks in wanted.items()}
    for commit, changed in commits:
        if all(path in changed for path in wanted):
            same = all(changed[path] == wanted[path] for path in wanted)
            if (same or all(_contains(changed[path], wanted[path]) for path in wanted)) and \
                    _spaced_alike(spaced, commit):
                events.append((commit, "made", "the same change" if same
                               else "within a larger change"))
                made.append(commit)
                continue
        named = [m for m in made for r in (reverts or {}).get(commit, ()) if m.startswith(r)]
        if named:
            events.append((commit, "undid", f"its message reverts {named[-1]}"))
            continue
        whole = all(changed.get(path) is not None and _contains(changed[path], undo[path])
                    for path in wanted)
        others = None if elsewhere is None else \
            (lambda codes, commit=commit: elsewhere(commit, list(wanted), codes))
        stripped = {path: _stripped(changed[path], kept)
                    for path in wanted if changed.get(path)}
        for path in wanted:
            # A reversed block undoes the change when it puts old code back. One that only
            # takes out lines the patch added (its old side empty) is upstream moving or
            # rewriting the fix's code (a lint pass moving an import, a guard a later design
            # no longer needs): superseded, not undone, unless the commit reverses the whole
            # change.
            undone = path in stripped and _reverses_a_block(large[path], stripped[path],
                                                            whole, others, old_lines[path])
            if undone:
                events.append((commit, "undid", "the same change reversed"
                               if changed.get(path) == undo[path] and len(wanted) == 1
                               else f"reverses part of it in {path}"))
                break
        else:
            # The whole change reversed inside larger blocks of the commit's (the fix
            # re-pointed one entry of a table, a later commit re-points the whole table, that
            # entry back to its old value) puts the old code back too. Only the whole change:
            # one small block of a large fix found inside a rewrite (a line's parentheses
            # back as they were) is that rewrite's, not an undoing. A block large enough to
            # count puts old lines back, so that may_reverse's probes (of those blocks) hold.
            # Old lines a commit only moved (_moved_only) are not put back: a function moved
            # down the file with the line the fix deletes in it is no undoing.
            if puts_back and all(path in stripped and all(
                    b in changed[path] or _reversed_within(bare, stripped[path])
                    for b, bare in zip(undo[path], bare_undo[path])) for path in wanted) \
                    and not any(_moved_only(old_lines[path], stripped[path]) for path in wanted):
                events.append((commit, "undid", "the whole change reversed within a larger "
                               "change"))
    landed_by = None
    for commit, what, _ in events:
        if what == "undid":
            landed_by = None
        elif landed_by is None:
            landed_by = commit
    return HistoryLanding(landed_by, events, _taken_out(wanted, commits, landed_by),
                          _rewritten(wanted, commits, set(made)) if landed_by else frozenset())


def _spaced_alike(spaced, commit: str) -> bool:
    """Whether `commit`'s blocks as spaced_blocks_of_lines makes them contain the change's,
    each path's in order (judge_history's `spaced`; True without it)."""
    if spaced is None:
        return True
    mine, theirs_of = spaced
    if callable(mine):
        mine = mine()
    theirs = theirs_of(commit)
    return all(path in theirs and _contains(theirs[path], blocks)
               for path, blocks in mine.items())


def _rewritten(wanted: dict[str, Blocks], commits: list[tuple[str, dict[str, Blocks]]],
               made: set[str]) -> frozenset[tuple[str, str, bytes]]:
    """(path, commit, the lines its block puts in, whitespace removed, joined) for each
    commit not in `made` whose block of a path takes out a line `wanted` removes and puts
    other lines in."""
    found: set[tuple[str, str, bytes]] = set()
    removes = {path: {line for removed, _ in blocks for line in _bare(removed)} - {b""}
               for path, blocks in wanted.items()}
    for commit, changed in commits:
        if commit in made:
            continue
        for path, lines in removes.items():
            for removed, added in changed.get(path, ()):
                if added and not lines.isdisjoint(_bare(removed)):
                    found.add((path, commit, b"".join(_bare(added))))
    return frozenset(found)


def _taken_out(wanted: dict[str, Blocks], commits: list[tuple[str, dict[str, Blocks]]],
               landed_by: str | None) -> frozenset[tuple[bytes, str]]:
    """The lines `wanted` adds that a commit listed after `landed_by` takes out (and does not
    put in again), whitespace removed, each with that commit: a line of the fix the target
    lacks that none took out was lost where the history shows no diff (a merge's resolution)."""
    if landed_by is None:
        return frozenset()
    after = False
    found: set[tuple[bytes, str]] = set()
    adds = {path: {line for _, added in blocks for line in _bare(added)}
            for path, blocks in wanted.items()}
    for commit, changed in commits:
        if after:
            for path, lines in adds.items():
                blocks = changed.get(path, ())
                # Net: a line the commit takes out and puts in again (moved below its
                # neighbour, re-indented) is still there after it.
                found.update((line, commit) for line in lines.intersection(
                    line for removed, _ in blocks for line in _bare(removed)).difference(
                    line for _, added in blocks for line in _bare(added)))
        after = after or commit == landed_by
    return frozenset(found)


def undo_probes(wanted: dict[str, Blocks]) -> dict[str, list[list[bytes]]] | None:
    """What a commit's diff of each path must hold for judge_history to find that the commit
    reverses a block of the change (`wanted`), in the diff's text with every whitespace byte
    taken out (`without_whitespace`): per reversed block large enough to count, each of its
    removed lines after `-` (blocks_of_lines takes the same lines with their whitespace out,
    past the `-` this keeps), all of them; for a block that removes none (the old code put
    back where the fix removed it), each of its added lines after `+`. (A commit taking the
    fix's lines out may put the old ones back wrapped, requoted, or in another file:
    _put_back_apart.) None when a block is a binary file's blob ids (judge_history also
    takes an old blob written back there, which no such text says)."""
    probes: dict[str, list[list[bytes]]] = {}
    for path, blocks in wanted.items():
        found = []
        for removed, added in reverse(blocks):
            if not _size_reaches(((removed, added),), MIN_UNDO_CHARS):
                continue
            if any(line.startswith(b"blob:") for line in (*removed, *added)):
                return None
            found.append([b"-" + line for line in _bare(removed)] if removed else
                         [b"+" + line for line in _bare(added)])
        if found:
            probes[path] = found
    return probes


def without_whitespace(chunk: bytes) -> bytes:
    """A diff's text as undo_probes' probes are looked for in it."""
    return chunk.translate(None, WHITESPACE)


def may_reverse(probes: list[list[bytes]], text: bytes) -> bool:
    """Whether a commit's diff of a path (`text`, without_whitespace) can hold a block that
    judge_history takes for undoing the change there (`probes`: undo_probes' of that path):
    False only when, for every such block, one of its lines is not in the text."""
    return any(all(needle in text for needle in block) for block in probes)


def _elsewhere(verdict) -> str | None:
    """The evidence that keeps a patch whatever the history says: a hunk whose change the
    target has only at another copy of the code, its own place still without it (detect.
    OwnPlaces.elsewhere), or whose own place still has its old code (OwnPlaces.old_code,
    which judge.with_history asks before the history is taken). A commit's change blocks say
    which lines it changed, not where: the commit that fixed the other copy makes "the same
    change"."""
    for f in verdict.files:
        for h in f.hunks:
            if h.elsewhere is not None:
                return (f"{f.path} hunk {h.index + 1} has it only at another copy of the code "
                        f"(its own place, {h.elsewhere}, does not)")
            if h.old_code is not None:
                # (Or a later commit took it out there inside a larger edit of a multi-block
                # fix, which judge_history does not count as an undo: both are said.)
                return (f"{f.path} hunk {h.index + 1}'s own place ({h.old_code}) still has "
                        "the old code: the commit made it at another place, or a later one "
                        "took it out there")
            if h.made_away is not None:
                return (f"{f.path} hunk {h.index + 1}'s change was made away from its own "
                        f"place ({h.made_away}): the commit changed another copy of the code")
            if h.indented is not None:
                return (f"{f.path} hunk {h.index + 1}'s added code is there only indented "
                        f"otherwise ({h.indented}): the commit made another change")
    return None


def combine_series(verdict, commit: str, first: int, last: int, gone: str | None = None):
    """The verdict of a patch whose run of the series (patches `first`..`last`) landed whole in
    `commit`: upstreamed, decided by the series' history (kept when the content shows the
    change only at another copy of the code: `_elsewhere`; or when a line the run adds is not
    in the target and no later commit took it out: `gone`, as for `combine`)."""
    other = _elsewhere(verdict) or gone
    if other is not None:
        return replace(verdict, evidence=list(verdict.evidence) + [
            f"history: commit {commit} makes the cumulative change of patches {first}-{last} "
            f"of the series, but {other}: kept"])
    evidence = list(verdict.evidence) + [
        f"history: commit {commit} makes the cumulative change of patches {first}-{last} of "
        "the series (a squash merge), and no later commit undoes it"]
    return replace(verdict, state="upstreamed", confidence="high",
                   hunks_landed=verdict.hunks_total, evidence=evidence,
                   decided_by="series history", landed_commit=commit)


# The states in which the content checks could not prove a landing that history may prove:
# the patch does not apply cleanly (its pre-image is not all there), or the checks disagree.
_UNDECIDED = {"fuzz", "conflict", "partial", "unsure"}


def combine(verdict, landing: HistoryLanding | None, gone: str | None = None):
    """The verdict with the history's word: a landing the content could not prove becomes
    `upstreamed` (decided by history), never the other way round. A patch whose every hunk still
    applies exactly (the old code is all there again) stays as the content says: the history
    landed it, but the target has lost it, and dropping it would lose the fix. So does one
    with a line it adds that the target does not have and no later commit took out (`gone`,
    which says so): a merge's resolution lost it, where the history shows no diff (a line a
    later commit took out or rewrote is upstream's later word: superseded); or one deleting
    a file the target has renamed (the history, read without renames, took the rename for
    the deletion)."""
    if landing is None:
        return replace(verdict, decided_by="content" if verdict.landed else None)
    evidence = list(verdict.evidence) + landing.describe()
    if verdict.landed:
        return replace(verdict, evidence=evidence, decided_by="content",
                       landed_commit=landing.landed_by)
    other = _elsewhere(verdict) if landing.landed_by is not None else None
    if other is not None:
        evidence.append(f"history: landed by {landing.landed_by}, but {other}: kept")
        return replace(verdict, evidence=evidence)
    if landing.landed_by is not None and gone is not None:
        evidence.append(f"history: landed by {landing.landed_by}, but {gone}: kept")
        return replace(verdict, evidence=evidence)
    if landing.landed_by is not None and verdict.state in _UNDECIDED:
        return replace(verdict, state="upstreamed", confidence="high",
                       hunks_landed=verdict.hunks_total, evidence=evidence,
                       decided_by="history", landed_commit=landing.landed_by)
    if landing.landed_by is not None:
        evidence.append(f"history: landed by {landing.landed_by}, but the target has the old "
                        f"code ({verdict.state}): kept")
    return replace(verdict, evidence=evidence)
