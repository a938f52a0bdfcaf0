"""Unified diffs made by git (`make_diff`: one `git diff --no-index` for any number of files,
headers written here with full blob ids) and git's file-level 3-way merge (`merge_file`), on
contents in memory; paths checked and quoted as git quotes them.
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from array import array
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from patchforge import tempfiles
from patchforge.errors import StoreError
from patchforge.model.record import record
from patchforge.patterns import on_first_use
from patchforge.store import kept as kept_files
from patchforge.store.git import StartedGit, run_git, scratch_dir, start_git

NULL_OID = "0" * 40


@lru_cache(maxsize=4096)
def check_path(path: str) -> bytes:
    """`path` as bytes, refused (StoreError) unless it is a relative path inside a tree.
    Remembered (a refusal is not): a rebase asks about the same few hundred paths thousands of
    times, at every read and tree lookup (3,800 calls, 9 ms, in a 300-patch rebase)."""
    raw = os.fsencode(path)
    if not raw or b"\n" in raw or b"\0" in raw or raw.startswith(b"/"):
        raise StoreError(f"invalid path {path!r} in the store")
    parts = raw.split(b"/")
    if any(p in (b"", b".", b"..", b".git") for p in parts):
        raise StoreError(f"invalid path {path!r} in the store")
    return raw


def decode_path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


_C_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r",
              34: b'\\"', 92: b"\\\\"}


def quote_c_path(raw: bytes, *, quote_high: bool = True) -> bytes:
    """git's C-style quoting of a path (as with core.quotePath=true), with the quotes."""
    out = bytearray(b'"')
    for byte in raw:
        if byte in _C_ESCAPES:
            out += _C_ESCAPES[byte]
        elif byte < 0x20 or byte == 0x7f or (quote_high and byte >= 0x80):
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    out += b'"'
    return bytes(out)


def needs_c_quotes(raw: bytes) -> bool:
    """Whether git's output (core.quotePath=true) quotes this path: it holds a control byte,
    a byte past ASCII, '"' or '\\'. (One C pass: a test of each byte in Python was 2% of a
    long rebase's interpreted work, every path of every diff header.)"""
    return len(raw.translate(None, _QUOTED_BYTES)) != len(raw)


_QUOTED_BYTES = bytes([*range(0x20), *range(0x7F, 0x100), 34, 92])


def git_output_path(raw: bytes) -> bytes:
    """A path as git's output names it (`git log --raw`, `rename from`): C-quoted when it
    needs quotes, else as it is."""
    return quote_c_path(raw) if needs_c_quotes(raw) else raw


def _diff_path(prefix: bytes, raw: bytes) -> bytes:
    # git quotes the whole "a/<path>" when the path needs quoting.
    full = prefix + raw
    return quote_c_path(full) if needs_c_quotes(raw) else full


def file_label(name: bytes) -> bytes:
    """A `---`/`+++` line's name as git writes it: a tab after a name holding a space, so that
    GNU patch (and quilt), which ends the name at a tab, takes the whole name and not its first
    word (git's diff.c, `emit_diff_symbol`)."""
    return name + b"\t" if b" " in name else name


def diff_header(path: str) -> bytes:
    """The `diff --git a/<path> b/<path>` line git writes for an unrenamed path (no newline)."""
    raw = os.fsencode(path)
    return b"diff --git " + _diff_path(b"a/", raw) + b" " + _diff_path(b"b/", raw)


def blob_oid(data: bytes) -> str:
    """The git blob id (SHA-1) of `data`, computed without git."""
    import hashlib  # here, not at import: loading OpenSSL is not free, and few commands hash

    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)  # not concatenated: that copies the content
    return digest.hexdigest()


@record(frozen=True)
class FileChange:
    """One file of a diff: paths (None for creation/deletion), contents and modes."""
    old_path: str | None
    new_path: str | None
    old: bytes | None
    new: bytes | None
    old_mode: str = "100644"
    new_mode: str = "100644"
    copy: bool = False  # new_path is a copy of old_path (which stays), not a rename

    @classmethod
    def at(cls, path: str, old: bytes | None, new: bytes | None, old_mode: str = "100644",
           new_mode: str = "100644") -> FileChange:
        """A change of the file at `path` (old None: created, new None: deleted)."""
        return cls(path if old is not None else None, path if new is not None else None, old,
                   new, old_mode, new_mode)


# The fixed options of every content diff: no colour, no external diff or textconv, myers with
# the indent heuristic, three lines of context. The index line is written by us with FULL blob
# ids (see make_file_diff) so that it never depends on what a store happens to hold.
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--diff-algorithm=myers",
                "--indent-heuristic", "-U3", "--no-renames", "--full-index")


def make_file_diff(old_path: str | None, new_path: str | None, old: bytes | None,
                   new: bytes | None, *, old_mode: str = "100644",
                   new_mode: str = "100644") -> bytes:
    """git's unified diff of one file's two contents, with a `diff --git a/<path> b/<path>` header.

    `old`/`old_path` None means a creation, `new`/`new_path` None a deletion; different paths a
    rename. The hunks are git's own (fixed options, see DIFF_OPTIONS); the header is written here:
    mode lines, `similarity index` and `rename from/to` (or `copy from/to`) as git writes them
    (the score is git's own), and `index <old>..<new>[ <mode>]` with full 40-hex blob ids, so
    the preimage can be found in the store by id and the bytes never depend on abbreviation
    lengths. Returns b"" when nothing changes. Binary content (a NUL byte on either side, see
    `is_binary`) gets git's `GIT binary patch` (literal or delta, whichever git finds smaller,
    with the reverse block), which `git apply` and `git am` take.
    """
    return make_diff([FileChange(old_path, new_path, old, new, old_mode, new_mode)])


def make_diff(changes: Iterable[FileChange]) -> bytes:
    """Several files' diffs (see make_file_diff) in one git process, sorted by path."""
    return make_diffs([changes])[0]


def make_diffs(groups: Iterable[Iterable[FileChange]]) -> list[bytes]:
    """make_diff for many patches at once, still one git process: a rebase re-emits every patch
    of a series, and starting a process per patch would dominate its time."""
    return StartedDiffs(groups).result()


class StartedDiffs:
    """make_diffs() begun: the contents written and git started now, the diffs made by
    result() (which waits for git); close() ends it unread. git runs while the caller goes on."""

    def __init__(self, groups: Iterable[Iterable[FileChange]]) -> None:
        self._groups = []
        for changes in groups:
            items = list(changes)
            for c in items:
                _check_change(c)
            items.sort(key=lambda c: (os.fsencode(c.new_path or c.old_path or ""),
                                      os.fsencode(c.old_path or "")))
            self._groups.append(items)
        flat = [c for items in self._groups for c in items]
        self._hunks = _GitHunks([(c.old, c.new) for c in flat])
        self.hunks_by_ids: dict[tuple[str, str], bytes] = {}

    def result(self) -> list[bytes]:
        hunks = self._hunks.result()
        ids = self._hunks.ids
        # (old blob id, new blob id) -> git's hunks of that pair of text contents, for a
        # caller that needs them again (the range-diff's exact pairs: rangediff._start_proofs)
        self.hunks_by_ids = {pair: made for pair, made in zip(ids, hunks)
                             if pair is not None and made.startswith(b"@@")}
        flat = [c for items in self._groups for c in items]
        scores = _similarities([(c.old, c.new) for c in flat if _moved(c)])
        out, at = [], 0
        for items in self._groups:
            mine = hunks[at:at + len(items)]
            known = ids[at:at + len(items)]
            at += len(items)
            out.append(b"".join(_diff_header(c, mine[i].startswith(b"@@"), scores, known[i])
                                + mine[i] for i, c in enumerate(items)
                                if c.old != c.new or c.old_path != c.new_path
                                or _mode_changed(c)))
        return out

    def close(self) -> None:
        self._hunks.close()


def _moved(c: FileChange) -> bool:
    """A rename or a copy: both sides, under two names."""
    return c.old is not None and c.new is not None and c.old_path != c.new_path


def _similarities(pairs: list[tuple[bytes | None, bytes | None]]) -> dict:
    """(old, new) -> git's similarity score (percent) of the two contents, as `git diff -M`
    writes it in `similarity index`; None when git sees no likeness at all.

    One `git diff --no-index -M` over every pair (`o/<i>` against `n/<i>.r`): git scores each
    source against each destination the same way whatever else it is given, but pairs them by
    best score, so a pair git matched otherwise is scored again on its own."""
    scores: dict = {}
    todo = []
    for old, new in pairs:
        if (old, new) in scores:
            continue
        if old == new:
            scores[(old, new)] = 100
            continue
        assert old is not None and new is not None
        scores[(old, new)] = None
        todo.append((old, new))
    found = _git_scores(todo)
    alone = [i for i in range(len(todo)) if i not in found]
    if len(todo) > 1:
        for i in alone:
            found.update({i: score for _, score in _git_scores([todo[i]]).items()})
    for i, score in found.items():
        scores[todo[i]] = score
    return scores


def _git_scores(todo: list[tuple[bytes, bytes]]) -> dict[int, int]:
    """i -> git's rename score of todo[i], for the pairs git matched with each other."""
    found = _git_renames([old for old, _ in todo], [new for _, new in todo], "-M1%")
    return {i: score for i, j, score in found if i == j}


def find_renames(deleted: list[tuple[str, bytes]],
                 created: list[tuple[str, bytes]]) -> dict[str, str]:
    """created path -> deleted path, for the pairs `git diff -M` would call a rename (git's own
    pairing and its default 50% similarity), so a file the user moved with `git mv` comes back
    as a rename rather than as a deletion and a new file. One git process, none when either
    side is empty."""
    found = _git_renames([data for _, data in deleted], [data for _, data in created], "-M")
    return {created[j][0]: deleted[i][0] for i, j, _ in found}


def _git_renames(olds: list[bytes], news: list[bytes], option: str) -> list[tuple[int, int, int]]:
    """(i, j, score) for each rename git's `diff -M` finds from olds[i] to news[j], as it pairs
    them (`option`: -M with the threshold). One `git diff --no-index` over the contents alone,
    none when either side is empty."""
    if not olds or not news:
        return []
    with tempfiles.TemporaryDirectory("patchforge-renames-", scratch_dir()) as tmp:
        root = Path(tmp)
        (root / "o").mkdir()
        (root / "n").mkdir()
        for i, data in enumerate(olds):
            (root / "o" / str(i)).write_bytes(data)
        # `.r`: no new file may share a name with an old one, or git would take them for the
        # same file changed instead of scoring them.
        for j, data in enumerate(news):
            (root / "n" / f"{j}.r").write_bytes(data)
        proc = run_git("diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv",
                       option, "--raw", "-z", "--", "o", "n", cwd=root, ok=(0, 1))
    found = []
    fields = proc.stdout.split(b"\0")
    at = 0
    while at < len(fields) - 1:
        status = fields[at].rsplit(b" ", 1)[-1]
        if status[:1] in (b"R", b"C"):  # a rename or copy names two paths
            if status[:1] == b"R":
                source, dest = fields[at + 1], fields[at + 2]
                found.append((int(source[2:]), int(dest[2:].removesuffix(b".r")),
                              int(status[1:])))
            at += 3
        else:
            at += 2
    return found


def _check_change(c: FileChange) -> None:
    if (c.old is None) != (c.old_path is None) or (c.new is None) != (c.new_path is None):
        raise StoreError("a diff side needs both a path and content, or neither")
    if c.old is None and c.new is None:
        raise StoreError("a diff needs at least one side")
    for mode in (c.old_mode, c.new_mode):
        if mode not in ("100644", "100755", "120000"):
            raise StoreError(f"unsupported file mode {mode}")


# The conflict markers' labels of a merge: the target, the base, the patch.
DEFAULT_LABELS = ("upstream", "base", "patch")


# git merge-file refuses a file larger than this as binary (xdiff's MAX_XDIFF_SIZE).
_MAX_XDIFF_SIZE = 1 << 30


def merges_as_binary(*sides: bytes) -> bool:
    """Whether git takes one of these contents for binary and will not merge them as text: a
    NUL byte in its first 8,000 bytes (git's `buffer_is_binary`)."""
    return any(b"\0" in side[:8000] for side in sides)


def merge_file(base: bytes, ours: bytes, theirs: bytes,
               labels: tuple[str, str, str] = DEFAULT_LABELS, *,
               diff3: bool = False) -> tuple[bool, bytes]:
    """git merge-file on three versions of one file: (clean, the merge, with conflict markers
    where it is not clean). The one place patchforge runs git's file-level 3-way merge.
    `diff3`: each conflict shows the base's lines too (`||||||| base`), as
    `merge.conflictStyle=diff3` does; what merges cleanly is the same.

    When one side is the base byte for byte, the merge is the other side: git's own merge
    (xdiff's xdl_merge) returns it as it is, and it is returned here without a git process (a
    patch whose files are merged because one of them conflicts merges the rest this way).
    Contents git takes for binary (`merges_as_binary`) are otherwise a conflict that keeps
    `ours`, as in git's own merges. Two sides the same bytes merge cleanly into them, also
    without git (FileMerge says why that is git's answer)."""
    merge = FileMerge(base, ours, theirs, labels, diff3=diff3)
    try:
        return merge.result()
    finally:
        merge.close()


class FileMerge:
    """merge_file's answer for three contents, its git process started when the object is made
    and read by `result()`: a caller that knows a merge's inputs before it needs the answer
    starts it first and does its own work meanwhile. `close()` ends the process (when the
    answer is not wanted after all) and removes its files; the answer never depends on when
    it is read."""

    def __init__(self, base: bytes, ours: bytes, theirs: bytes,
                 labels: tuple[str, str, str] = DEFAULT_LABELS, *, diff3: bool = False) -> None:
        self._answer: tuple[bool, bytes] | None = None
        self._proc: subprocess.Popen | None = None
        self._tmp: str | None = None
        if ours == base:
            self._answer = (True, theirs)
            return
        if theirs == base:
            self._answer = (True, ours)
            return
        if merges_as_binary(base, ours, theirs):
            # `git merge-file` refuses such a file ("Cannot merge binary files"), which ended
            # the whole status or rebase. A rebase meets it as git's merge does: a conflict
            # that keeps our side (the target's file), without markers.
            self._answer = (False, ours)
            return
        if ours == theirs and max(len(base), len(ours)) <= _MAX_XDIFF_SIZE:
            # Both sides made the same change (landed detection asks this of a target that
            # holds exactly the patched file). git's xdl_merge diffs base -> ours and base ->
            # theirs: the same input, the same change script; xdl_do_merge skips each change
            # both scripts hold alike (same base lines, same new lines), and with no change
            # left xdl_fill_merge_buffer copies ours' lines whole: ours, clean, whatever the
            # labels or the conflict style. (Larger files git refuses: left to it.)
            self._answer = (True, ours)
            return
        # The style pinned (`--diff3` overrides it): inside a repository git reads its
        # `merge.conflictStyle`, and the answer must be the three contents' alone.
        args = ("-c", "merge.conflictStyle=merge", "merge-file", "-p",
                *(["--diff3"] if diff3 else []),
                "-L", labels[0], "-L", labels[1], "-L", labels[2])
        # An earlier command's merge of the same three contents answers it (KeptAnswers): the
        # answer as kept, `1` (clean) or `0`, then the merged text (reading version 1).
        self._kept = _kept
        self._name = ""
        if self._kept is not None:
            self._name = self._kept.name_of("merge-file", ("1", *args), (base, ours, theirs))
            found = self._kept.answer(self._name)
            if found is not None and found[:1] in (b"0", b"1"):
                self._answer = (found[:1] == b"1", found[1:])
                return
        self._tmp = tempfiles.make_temp_dir("patchforge-merge-", scratch_dir())
        try:
            paths = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                path = os.path.join(self._tmp, name)
                with open(path, "wb") as f:
                    f.write(data)
                paths.append(path)
            # The merge goes to a file, not a pipe: a pipe's buffer would hold the process up
            # until the answer is read.
            with open(os.path.join(self._tmp, "merged"), "wb") as out:
                self._proc = start_git(*args, *paths, stdin=subprocess.DEVNULL, stdout=out)
        except BaseException:
            self.close()
            raise

    def result(self) -> tuple[bool, bytes]:
        if self._answer is None:
            assert self._proc is not None and self._tmp is not None
            _, err = self._proc.communicate()
            code = self._proc.returncode
            # merge-file exits with the number of conflicts (up to 127), negative on an error.
            if code < 0 or code > 127:
                raise StoreError(f"git merge-file failed: {err.decode(errors='replace')}")
            with open(os.path.join(self._tmp, "merged"), "rb") as f:
                self._answer = (code == 0, f.read())
            if self._kept is not None:
                self._kept.keep(self._name, [b"1" if code == 0 else b"0", self._answer[1]])
        return self._answer

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.returncode is None:
                self._proc.kill()
                self._proc.communicate()
            self._proc = None
        if self._tmp is not None:
            tempfiles.remove_tree(self._tmp, ignore_errors=True)
            self._tmp = None


class KeptAnswers:
    """git's answers about contents alone, kept in the cache (`<cache>/kept/contents/`) for the
    next command: a 3-way merge (FileMerge) and the change blocks of a batch of pairs
    (changed_blocks) are functions of their contents, the exact arguments git is asked with,
    how patchforge reads git's output, and git, which an answer's name is a digest of
    (store.kept.answer_name). (A few of patchforge's own answers about contents named by
    their blob ids are kept here too: judge.HistoryIndex's files that cannot hold a code.)
    A status asked again of the same series and target (or after a patch near its end was
    edited) asks git again only where the inputs changed: on a 93-patch
    AITER series 70 `git merge-file` and the own places' diffs, about a quarter of the
    command's CPU. Named, written, checked and bounded as the store's other kept answers
    (store.kept): one cut short or damaged is asked of git again. The AT_MOST most recently
    used are kept, within BYTES_AT_MOST (`bound`, when the command's store closes); a cache
    that cannot be written keeps nothing and says nothing."""

    AT_MOST = 512
    BYTES_AT_MOST = 64 << 20  # one status of a 93-patch AITER series keeps about 10 MB
    DIR = "kept/contents"

    def __init__(self, cache: Path) -> None:
        self.directory = cache / self.DIR
        self._wrote = False

    def name_of(self, kind: str, args: tuple[str, ...], contents: Iterable[bytes]) -> str:
        """The name of the answer of kind `kind` to git's arguments `args` (with the version of
        the caller's reading of git's output) about `contents`."""
        return kept_files.answer_name(kind, args, contents)

    def answer(self, name: str) -> bytes | None:
        """The kept answer `name`, marked used now; None without a whole one."""
        try:
            with open(self.directory / name, "rb") as f:
                data = f.read()
                with contextlib.suppress(OSError):  # a read-only cache: read, not marked
                    os.utime(f.fileno())
        except OSError:
            return None
        return kept_files.answer_of(data)

    def keep(self, name: str, parts: list[bytes]) -> None:
        """Keep `parts`, one after the other, as answer `name` (store.kept.keep)."""
        if kept_files.keep(self.directory, name, kept_files.answer_parts(parts)):
            self._wrote = True

    def bound(self) -> None:
        """After a command that kept answers: remove all but the AT_MOST most recently used
        (by modification time: written, or read by `answer`) that fit in BYTES_AT_MOST
        together, and killed writes' temporary files (store.kept.bound)."""
        if self._wrote:
            kept_files.bound(self.directory, lambda name: 0, [(self.AT_MOST, self.BYTES_AT_MOST)])


# The kept answers FileMerge and changed_blocks ask first and keep git's answers in: those
# of the command's store while it is open (keeping_answers), else none.
_kept: KeptAnswers | None = None


def keeping_answers(kept: KeptAnswers | None) -> KeptAnswers | None:
    """Make `kept` the answers FileMerge and changed_blocks ask first and keep git's in
    (None: nothing is kept); returns the ones before, for the caller to put back."""
    global _kept
    before, _kept = _kept, kept
    return before


def kept_answers() -> KeptAnswers | None:
    """The kept answers of the command's store while it is open (keeping_answers), else None:
    for an answer of patchforge's own that is a function of contents alone (named by their
    blob ids, say), kept beside git's."""
    return _kept


def merge_can_give_ours(base: bytes, ours: bytes, theirs: bytes) -> bool:
    """False when git's 3-way merge of these three versions cannot be clean with `ours` as its
    result: a line of `theirs` that is nowhere in `base` is missing from `ours`.

    Why that is enough: a line of `theirs` outside the regions where git's diff sees `theirs`
    changed matches a line of `base`. A line inside such a region reaches a clean result
    whatever the alignment: `ours` left the region alone (theirs is taken), or made the
    identical change there (taken once); any other overlap is a conflict. So a clean merge
    that gives `ours` back has every new line of `theirs` in `ours`. Lines are compared
    without their end of line, which only lets more cases through to the merge itself.
    True says nothing: only `merge_file` tells."""
    # Set operations (C loops), not a test per line: this runs for every file landed
    # detection may merge, and files of a few thousand lines are common.
    new_lines = set(theirs.split(b"\n"))
    new_lines.difference_update(base.split(b"\n"))
    if not new_lines:
        return True
    new_lines.difference_update(ours.split(b"\n"))
    return not new_lines


def new_runs_are_in_ours(base: bytes, ours: bytes, theirs: bytes) -> bool:
    """False when git's 3-way merge of these three versions cannot be clean with `ours` as its
    result, by where the new lines of `theirs` are: a run of consecutive lines of `theirs`
    that are nowhere in `base`, with the line of `theirs` before it and the one after it (or
    the file's start or end), is not consecutive lines of `ours`. A stronger test than
    merge_can_give_ours (which asks each new line alone), asked after it.

    Why that is enough (git's xdiff, `xdl_merge`): such a run is inside one change of the
    base -> theirs diff (a change is a longest run of changed lines, and a line the base
    lacks is changed in any alignment). A clean merge whose result is `ours` takes theirs'
    text nowhere but where it equals ours' (a change of theirs alone replaces ours' text,
    which there is the base's, by theirs', which holds lines the base lacks: never equal).
    So the change is one that ours made identically, or part of an overlap whose two sides
    are identical (else a conflict remains). Either is bordered, on both sides, by text the
    two sides share (lines neither diff changed, or changes both made identically), in the
    same order: the border lines of theirs are those of ours, or both are at the file's start
    or end. Lines are compared without their line end (a last line without LF matches one
    with), which only lets more cases through to the merge. True says nothing: only
    `merge_file` tells."""
    known = set(base.split(b"\n"))
    lines = theirs.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the text after the last LF: no line
    new = [k for k, line in enumerate(lines) if line not in known]
    if not new:
        return True
    padded = b"\n" + ours + (b"\n" if ours and not ours.endswith(b"\n") else b"")
    at = 0
    while at < len(new):
        first = last = new[at]
        at += 1
        while at < len(new) and new[at] == last + 1:
            last = new[at]
            at += 1
        # The run with the line before and after it, as consecutive lines of `ours`; at the
        # file's start (end) the run starts (ends) `ours` too.
        window = b"\n" + b"\n".join(lines[max(first - 1, 0):last + 2]) + b"\n"
        if first == 0 and last == len(lines) - 1:
            found = padded == window
        elif first == 0:
            found = padded.startswith(window)
        elif last == len(lines) - 1:
            found = padded.endswith(window)
        else:
            found = window in padded
        if not found:
            return False
    return True


_HUNK_HEADER = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
# The `index <old id>..<new id>[ <mode>]` line of a file's header in git's diff (full ids).
_INDEX_IDS = re.compile(rb"^index ([0-9a-f]{40})\.\.([0-9a-f]{40})(?: [0-7]+)?$", re.M)


# The version of changed_blocks' reading of git's diff into blocks and of the blocks' layout
# as kept: part of a kept answer's name.
_BLOCKS_READING = 1


def changed_blocks(pairs: list[tuple[bytes, bytes]]
                   ) -> list[list[tuple[int, int, int, int]] | None]:
    """Where git's diff of `old` to `new` (text; DIFF_OPTIONS) changes lines, for each (old,
    new) of `pairs`: each run of removed and added lines as (old start, old end, new start,
    new end), 0-based, end excluded, in order; every line outside them is the same line in
    both files, shifted by the blocks before it. None when git takes either side for binary.
    One git process for all the pairs: git diffs each pair on its own (files named by the
    pair's number, renames off), so a pair's blocks are the same whichever pairs it is asked
    with."""
    kept, name = _kept, ""
    if kept is not None and pairs:
        # An earlier command's diff of the same pairs answers it (KeptAnswers): the blocks as
        # numbers, per pair its count (-1: binary) and then its blocks' four ends.
        # Named by the arguments _GitHunks gives git and the version of the reading of its
        # output (_blocks_of_hunks, is_binary's choice of binary pairs, the numbers' layout):
        # raise _BLOCKS_READING with any change to that reading.
        name = kept.name_of("changed-blocks", (str(_BLOCKS_READING), sys.byteorder,
                                               *_GitHunks.arguments()),
                            (side for pair in pairs for side in pair))
        answer = kept.answer(name)
        if answer is not None:
            known = _blocks_read(answer, len(pairs))
            if known is not None:
                return known
    texts = _GitHunks(list(pairs)).result()
    blocks = [[] if old == new else _blocks_of_hunks(text)
              for (old, new), text in zip(pairs, texts)]
    if kept is not None and pairs:
        numbers = array("q")
        for found in blocks:
            numbers.append(-1 if found is None else len(found))
            for block in found or ():
                numbers.extend(block)
        kept.keep(name, [numbers.tobytes()])
    return blocks


def _blocks_read(data: bytes, count: int) -> list[list[tuple[int, int, int, int]] | None] | None:
    """changed_blocks' answer for `count` pairs as it kept it, None unless it is one whole."""
    if len(data) % 8:
        return None
    numbers = array("q")
    numbers.frombytes(data)
    out: list[list[tuple[int, int, int, int]] | None] = []
    at = 0
    while at < len(numbers) and len(out) < count:
        size = numbers[at]
        at += 1
        if size < 0:
            out.append(None)
            continue
        end = at + 4 * size
        if end > len(numbers):
            return None
        run = numbers[at:end]
        out.append(list(zip(run[0::4], run[1::4], run[2::4], run[3::4])))
        at = end
    return out if len(out) == count and at == len(numbers) else None


def blocks_of_file_diff(diff: bytes) -> list[tuple[int, int, int, int]] | None:
    """changed_blocks' answer for one pair from git's diff of that pair made with DIFF_OPTIONS'
    options (the store's history diffs, `UpstreamStore.commit_patches` and `log_patches`),
    header and hunks: None where it has no hunks (a binary pair)."""
    at = diff.find(b"\n@@")
    return _blocks_of_hunks(diff[at + 1:]) if at >= 0 else None


def _blocks_of_hunks(hunks: bytes) -> list[tuple[int, int, int, int]] | None:
    """changed_blocks of one pair from its hunks as _GitHunks gives them."""
    if not hunks.startswith(b"@@"):
        return None
    blocks: list[tuple[int, int, int, int]] = []
    o = n = 0
    start: tuple[int, int] | None = None
    # By the line's first byte, the header's pattern tried only on lines that start with
    # `@` (every hunk line starts with ` `, `-`, `+` or `\`): a match call per line was
    # 40% of the function's time over the AITER rows' 37,000-51,000 lines.
    for line in hunks.split(b"\n"):
        kind = line[:1]
        if kind == b"-":
            if start is None:
                start = (o, n)
            o += 1
        elif kind == b"+":
            if start is None:
                start = (o, n)
            n += 1
        elif kind == b" ":
            if start is not None:
                blocks.append((start[0], o, start[1], n))
                start = None
            o += 1
            n += 1
        elif kind == b"@":
            header = _HUNK_HEADER.match(line)
            if header is not None:
                if start is not None:
                    blocks.append((start[0], o, start[1], n))
                    start = None
                # A count of 0 puts the start on the line before (`-5,0`: after line 5).
                o = int(header[1]) - (0 if header[2] == b"0" else 1)
                n = int(header[3]) - (0 if header[4] == b"0" else 1)
        # `\ No newline at end of file` and the final empty split piece change nothing.
    if start is not None:
        blocks.append((start[0], o, start[1], n))
    return blocks


def _mode_changed(c: FileChange) -> bool:
    return c.old is not None and c.new is not None and c.old_mode != c.new_mode


def _diff_header(c: FileChange, has_hunks: bool, scores: dict | None = None,
                 ids: tuple[str, str] | None = None) -> bytes:
    """The header of `c`'s section as git writes it. `ids`: the two sides' blob ids as git's
    diff of them said (_GitHunks.ids), so that the contents are not hashed a second time (at
    300 patches a rebase's new diffs hashed 3.3 MB that git had just hashed); without them
    they are hashed here."""
    old_raw = check_path(c.old_path) if c.old_path is not None else None
    new_raw = check_path(c.new_path) if c.new_path is not None else None
    either = old_raw if old_raw is not None else new_raw
    assert either is not None  # _check_change: at least one side
    a = _diff_path(b"a/", old_raw if old_raw is not None else either)
    b = _diff_path(b"b/", new_raw if new_raw is not None else either)
    lines = [b"diff --git " + a + b" " + b]
    if c.old is None:
        lines.append(b"new file mode " + c.new_mode.encode())
    elif c.new is None:
        lines.append(b"deleted file mode " + c.old_mode.encode())
    else:
        if c.old_mode != c.new_mode:
            lines += [b"old mode " + c.old_mode.encode(), b"new mode " + c.new_mode.encode()]
        if old_raw != new_raw:
            assert old_raw is not None and new_raw is not None  # both sides exist here
            kind = b"copy" if c.copy else b"rename"
            score = (scores or {}).get((c.old, c.new))
            if score is not None:
                lines.append(b"similarity index %d%%" % score)
            lines += [kind + b" from " + git_output_path(old_raw),
                      kind + b" to " + git_output_path(new_raw)]
    if c.old != c.new:
        if ids is None:
            ids = (blob_oid(c.old) if c.old is not None else NULL_OID,
                   blob_oid(c.new) if c.new is not None else NULL_OID)
        old_id, new_id = ids
        index = b"index " + old_id.encode() + b".." + new_id.encode()
        if c.old is not None and c.new is not None and c.old_mode == c.new_mode:
            index += b" " + c.old_mode.encode()
        lines.append(index)
    # As git: no ---/+++ lines without hunks (an empty file created or deleted).
    if has_hunks:
        lines.append(b"--- " + file_label(a if c.old is not None else b"/dev/null"))
        lines.append(b"+++ " + file_label(b if c.new is not None else b"/dev/null"))
    return b"".join(line + b"\n" for line in lines)


def is_binary(data: bytes | None) -> bool:
    """Content patchforge carries as a `GIT binary patch`: any NUL byte. (git itself looks at
    the first 8000 bytes only; a NUL further in would give a text diff no tool applies right.)
    A CSV or JSON file, CRLF or not, UTF-8 or not, is text."""
    return data is not None and b"\0" in data


def _write_new(path: str, data: bytes) -> None:
    """`data` into a new file at `path` (a scratch file for git to read: not synced)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def split_at_file_headers(diff: bytes) -> list[bytes]:
    """`re.split(rb"(?m)^(?=diff --git )", diff)`, cut with bytes.find: the text before the
    first `diff --git ` line (empty when the text starts with one), then each file's section
    from its `diff --git ` line to the next. (The pattern's search tries a match at every byte
    of the text, megabytes of git's diffs in a status: 3% of its instructions.)"""
    cuts = [0] if diff.startswith(b"diff --git ") else []
    at = diff.find(b"\ndiff --git ")
    while at != -1:
        cuts.append(at + 1)
        at = diff.find(b"\ndiff --git ", at + 1)
    bounds = [0, *cuts, len(diff)]
    return [diff[start:end] for start, end in zip(bounds, bounds[1:])]


class _GitHunks:
    """The hunk part (from the first `@@`, or the `GIT binary patch` line) of git's diff of each
    (old, new) pair: started when made, read by result().

    One `git diff --no-index` over two temporary directories whose files are named by the pair's
    number, so a 300-file diff costs one process, not 300. Pairs with binary content are marked
    `binary` in an attributes file for that process, so git writes them as binary patches
    whatever its own heuristic says; deflate runs at the fixed level 9. git hashes both sides
    of each pair for its `index` line (DIFF_OPTIONS asks for full ids): result() keeps those
    ids too (`ids`), so that no caller hashes the same contents again.
    """

    def __init__(self, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
        self._count = len(pairs)
        # Per pair, the blob ids of its two sides as git's `index` line gives them (the null id
        # for a side that is None), None for a pair git wrote no such line for (the same
        # content on both sides): filled by result().
        self.ids: list[tuple[str, str] | None] = [None] * len(pairs)
        self._tmp: tempfiles.TemporaryDirectory | None = None
        self._git: StartedGit | None = None
        todo = [i for i, (o, n) in enumerate(pairs) if o != n]
        if not todo:
            return
        self._tmp = tempfiles.TemporaryDirectory("patchforge-diff-", scratch_dir())
        try:
            root = Path(self._tmp.name)
            for side in ("o", "n"):
                (root / side).mkdir()
            # Each side's file by its string path and a plain descriptor: a walk's first batch
            # writes hundreds, and a Path and a buffered file object per file were most of
            # the interpreter's work here.
            old_side, new_side = os.path.join(root, "o", ""), os.path.join(root, "n", "")
            binary = []
            for i in todo:
                old, new = pairs[i]
                if old is not None:
                    _write_new(old_side + str(i), old)
                if new is not None:
                    _write_new(new_side + str(i), new)
                if is_binary(old) or is_binary(new):
                    binary.append(i)
            attributes = root / "attributes"
            attributes.write_bytes(b"".join(b"o/%d binary\nn/%d binary\n" % (i, i)
                                            for i in binary))
            self._git = StartedGit("-c", f"core.attributesFile={attributes}",
                                   *self.arguments(), "--", "o", "n", cwd=root, ok=(0, 1))
        except BaseException:
            self.close()
            raise

    @staticmethod
    def arguments() -> tuple[str, ...]:
        """git's arguments for the diff (after the attributes file, before the two sides)."""
        return ("-c", "core.compression=9", "diff", "--no-index", *DIFF_OPTIONS, "--binary")

    def result(self) -> list[bytes]:
        result = [b""] * self._count
        if self._git is None:
            return result
        try:
            out = self._git.result()
        finally:
            self.close()
        # No line of a hunk starts with "diff --git " (every hunk line starts with ' ', '+',
        # '-' or '\'), so splitting on it is exact.
        for chunk in split_at_file_headers(out):
            if not chunk:
                continue
            m = re.match(rb"diff --git (?:a/o|a/n)/(\d+) b/[on]/(\d+)\n", chunk)
            if not m:
                raise StoreError("unexpected git diff output: "
                                 + chunk[:80].decode("utf-8", "replace"))
            at = chunk.find(b"\n@@ ")
            if at < 0:
                at = chunk.find(b"\nGIT binary patch\n")
            index = _INDEX_IDS.search(chunk, 0, at if at >= 0 else len(chunk))
            if index is not None:
                self.ids[int(m.group(1))] = (index[1].decode(), index[2].decode())
            if at < 0:
                if b"\nBinary files " in chunk:
                    raise StoreError("git wrote a binary change without its data")
                continue
            result[int(m.group(1))] = chunk[at + 1:]
        return result

    def close(self) -> None:
        if self._git is not None:
            self._git.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


# A conflict marker line as git merge-file writes one (`<<<<<<< ours`, `>>>>>>> theirs`).
_CONFLICT_MARKER = on_first_use(rb"^(?:<<<<<<<|>>>>>>>)(?: [^\n]*|\r?)$", re.M)
# The lines between a conflict's sides: `=======`, and diff3's `||||||| base`.
_SIDE_MARKER = on_first_use(rb"^(?:=======|\|\|\|\|\|\|\|(?: [^\n]*)?)\r?$", re.M)


def conflict_markers_left(old: bytes | None, new: bytes, own_lines: Counter | None = None
                          ) -> bool:
    """Whether `new` (a file as the user resolved it) still holds a conflict marker line that
    `old` (the file before the merge) does not have: a file with such lines of its own (a test
    fixture of merges, a document about them) can be resolved with its own lines kept.

    A `=======` line left alone (the user took out the two outer markers only) counts too:
    it went into the patch as `+=======`, and every check passed. Such lines are counted, so
    that those the file had and those the fix itself adds (`own_lines`, its added lines
    without `+`, each with its count: a heading's underline in a document) go through."""
    own = set(_CONFLICT_MARKER.findall(old)) if old else set()
    if (b"<<<<<<<" in new or b">>>>>>>" in new) and any(
            line not in own for line in _CONFLICT_MARKER.findall(new)):
        return True
    if b"=======" not in new and b"|||||||" not in new:
        return False
    allowed = Counter(line.rstrip(b"\r") for line in _SIDE_MARKER.findall(old or b""))
    allowed.update(own_lines or {})
    found = Counter(line.rstrip(b"\r") for line in _SIDE_MARKER.findall(new))
    return any(count > allowed[line] for line, count in found.items())


def added_lines(patch) -> Counter:
    """The lines a parsed patch adds (without `+` and line end) with their counts, for
    `conflict_markers_left`."""
    return Counter(line[1:].rstrip(b"\r\n") for fp in patch.file_patches
                   for hunk in getattr(fp, "hunks", ()) for line in hunk.lines
                   if line[:1] == b"+")
