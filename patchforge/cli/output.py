"""Rendering for the terminal: colour only on a terminal (never with NO_COLOR), JSON documents,
tables, and a progress indicator on stderr that is silent when stderr is not a terminal.

click is imported only where a colour is painted: `echo` writes what click.echo writes, so a
command run without click (a clean `rebase --to`, `cli.direct`) does not load it for its
output."""
from __future__ import annotations

import os
import re
import sys
import time
from typing import TYPE_CHECKING

from patchforge.patterns import on_first_use

if TYPE_CHECKING:
    from patchforge.project import Project

# Control characters a terminal acts on: C0 (but newline and tab), DEL and C1 (U+009B is a
# one-character CSI on some terminals). A name or description from a patch, a config or the
# network could otherwise set the window title, clear the screen or rewrite earlier lines.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Characters that change how a line reads without being seen: zero-width ones, bidirectional
# overrides and isolates (`fix \u202egnp.exe` shows as "fix exe.png"), the line and paragraph
# separators, the byte-order mark (names.INVISIBLE, and U+2028/U+2029). A patch's header, a tag
# or a forge's answer is shown with them as `\u202e`. A translation table, not a character class
# (which `re` compiles past U+00FF into a map of 65,536 characters, docs/performance.md), used
# only on text that is not ASCII.
_INVISIBLE_ESCAPES = {code: f"\\u{code:04x}" for code in (
    *range(0x200B, 0x2010), *range(0x2028, 0x202F), *range(0x2060, 0x206A), 0xFEFF)}
# What patchforge itself writes to a terminal: colours (SGR) and the progress line's reset.
_OWN_ESCAPE = on_first_use(r"\x1b\[[0-9;]*m|\r\x1b\[K")


# What click.echo removes from the text it writes to a stream that is not a terminal
# (click's own `strip_ansi`).
_ANSI_STYLE = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(text: str = "", *, err: bool = False) -> None:
    """`text` and a newline on stdout (stderr with `err`), flushed: click.echo where click is
    loaded (every command click parsed), else the bytes click.echo would write (a text line:
    ANSI styles removed unless the stream is a terminal), without loading click for them."""
    click = sys.modules.get("click")
    if click is not None:
        click.echo(text, err=err)
    else:
        write_line(sys.stderr if err else sys.stdout, text)


def write_line(stream, text: str) -> None:
    """What click.echo(text, file=stream) writes: `text` and a newline, ANSI styles removed
    unless `stream` is a terminal, then a flush."""
    try:
        terminal = stream.isatty()
    except Exception:  # as click asks: a stream that cannot tell is not a terminal
        terminal = False
    stream.write(text + "\n" if terminal else _ANSI_STYLE.sub("", text + "\n"))
    stream.flush()


def neutralize(text: str) -> str:
    """`text` with every terminal control character shown as a visible escape (`\x1b`), and
    every invisible one (zero-width, bidirectional) as `\\u202e`."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text if text.isascii() else text.translate(_INVISIBLE_ESCAPES)


def escape_what_cannot_be_encoded(stream):
    """Make `stream` write a character its encoding cannot hold (an em dash of a patch's
    description on an ISO-8859-1 terminal) as an escape (`\\u2014`) instead of ending the
    command with UnicodeEncodeError; returns what puts the stream back as it was."""
    errors = getattr(stream, "errors", None)
    if errors != "strict" or not hasattr(stream, "reconfigure"):
        return lambda: None
    stream.reconfigure(errors="backslashreplace")
    return lambda: stream.reconfigure(errors=errors)


class SafeTerminalStream:
    """stdout/stderr as the commands see them: every control character in what is written is
    made visible, except the colours and progress resets patchforge itself writes when the
    stream is a terminal. Bytes written to `.buffer` (`show --raw`) pass unchanged."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._own = stream.isatty() if hasattr(stream, "isatty") else False

    def write(self, text: str) -> int:
        if self._own:
            parts, last = [], 0
            for match in _OWN_ESCAPE.finditer(text):
                parts.append(neutralize(text[last:match.start()]))
                parts.append(match.group())
                last = match.end()
            parts.append(neutralize(text[last:]))
            self._stream.write("".join(parts))
        else:
            self._stream.write(neutralize(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


STATE_COLORS = {"applies": "green", "offset": "green", "fuzz": "yellow", "conflict": "red", "merges": "yellow",
                "upstreamed": "cyan", "partial": "yellow", "obsolete": "red", "unsure": "magenta",
                "empty": "yellow",
                "ok": "green", "drift": "red", "missing": "red", "mismatch": "red"}


def announce_state(project: Project, *, as_json: bool = False) -> bool:
    """What a read-only command says first (on stderr): a stopped or interrupted rebase, an open
    edit, a skipped fix, each with its next step (with --json the document carries it instead:
    a terminal mixes stderr into the one document stdout must be). True when something needs
    attention (a rebase in progress, a skipped fix): the command then exits 1 even if its own
    check passes."""
    return announce_state_report(project, as_json=as_json)[1]


def announce_state_report(project: Project, *, as_json: bool = False):
    """`announce_state`, giving the whole `state.state_report` it said (notes, needs
    attention, skipped fixes): a command that puts them into its document too uses the one
    reading it announced."""
    from patchforge.state import state_report

    report = state_report(project)
    say_notes(report[0], as_json=as_json)
    return report


def say_notes(notes: list[str], *, as_json: bool = False) -> None:
    """The notes of a `state.state_report` on stderr (with --json the document carries them):
    a command that reads the project under its read lock says them once it has let go, so a
    terminal or a pipe that does not take them holds back no rebase."""
    if not as_json:
        for line in notes:
            echo(f"note: {line}", err=True)


def say_overlays_lag(project: Project) -> None:
    """After a command that changed the series without regenerating the overlays (refresh,
    delete, rename, move, bring-back, import), in a project whose overlays are generated: the
    manifest names every patch's bytes, so what is committed under overlays/ no longer matches
    until `patchforge overlays` runs, whenever the change reaches a file the overlays hold
    (stderr: stdout may be a JSON document)."""
    if (project.overlays_dir / "SHA256SUMS").exists():
        echo("note: the series changed and overlays/ was not regenerated: `patchforge "
             "overlays` does it (`patchforge overlays --check` says whether it is needed; "
             "CI's check fails until then)", err=True)


def say_unrefreshed_edits(project: Project, store, upstreams, used: str, after: str = "") -> None:
    """A note for each of `upstreams` whose open edit has changes not refreshed: a command
    that reads the patch files (a dry run, `overlays`, an export) made its result without
    them, which is easy to take for the fix as edited. `used` says what the command made of
    the patch file, up to the step that brings the changes in; `after` follows that step."""
    if not (project.state_dir / "work").is_dir():
        return  # nothing is being edited (and the worktree module need not be loaded)
    from patchforge.state import edit_command, edit_pin_moved, marked_left, several_edits_open
    from patchforge.worktree import editing, unrefreshed

    several = several_edits_open(project)
    for upstream in upstreams:
        state = editing(project, upstream)
        # A stopped bring-back is no edit: its fix is in skipped/, in no patch file the
        # command read, `refresh` refuses it, and its own note names `bring-back --continue`.
        if state and not state.get("bring_back") \
                and unrefreshed(project, store, upstream, state):
            refresh = edit_command('refresh', upstream, state['patch'], several)
            moved = edit_pin_moved(project, upstream, state, several)
            if moved:
                echo(f"note: {upstream}/{state['patch']} is being edited and has changes not "
                     f"refreshed: {used} they are in the patch file, and `{refresh}` refuses "
                     f"them now: {moved[0]}; {moved[1]}{after}", err=True)
                continue
            # refresh refuses while a block `edit` marked is left: not the next step alone.
            marked = marked_left(project.work_dir(upstream), state)
            first = (f"the blocks `edit` marked in {', '.join(marked)} are resolved and "
                     if marked else "")
            echo(f"note: {upstream}/{state['patch']} is being edited and has changes not "
                 f"refreshed: {used} {first}"
                 f"`{refresh}`{after}",
                 err=True)


def say_left_behind(project: Project, directory, files: list[str], *,
                    late: bool = False) -> None:
    """Where `rebase --skip/--abort` or `bring-back --abort` kept the files made in a stop's
    worktree that nobody added, or (`late`) a new worktree the files written in its place
    after the last one there ended (stderr: stdout may be a JSON document)."""
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    what = ("written in the worktree's place after its last edit ended (an editor saving "
            "late?), in no patch," if late else "made in the worktree but not part of the fix")
    from patchforge.model.words import counted

    echo(f"note: {counted(len(files), 'file')} {what} ({shown}) {'is' if len(files) == 1 else 'are'} "
         "kept in "
         f"{directory.relative_to(project.root)}", err=True)


def say_resolution_kept(project: Project, directory, files: list[str], command: str) -> None:
    """Where `rebase --abort` or `bring-back --abort` kept the stop's files changed by hand
    (a resolution), and the way to use them when the same stop comes again (stderr)."""
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    from patchforge.model.words import counted

    one = len(files) == 1
    echo(f"note: {counted(len(files), 'file')} changed in the stop's worktree since it stopped (a "
         f"resolution: {shown}) {'is' if one else 'are'} kept in "
         f"{directory.relative_to(project.root)}; to use {'it' if one else 'them'}, copy "
         f"{'it' if one else 'them'} into .patchforge/work/<upstream>/ when `{command}` stops there "
         "again", err=True)


def configure_logging(verbosity: int) -> None:
    """-q: errors only; default: warnings; -v: phase lines (what is being done, with timings);
    -vv: debug (every HTTP request, every git command with its time). All on stderr, so stdout
    stays the command's output (one JSON document under --json)."""
    import logging

    logger = logging.getLogger("patchforge")
    level = (logging.ERROR if verbosity < 0 else logging.WARNING if verbosity == 0
             else logging.INFO if verbosity == 1 else logging.DEBUG)
    logger.setLevel(level)
    for old in list(logger.handlers):  # a second main() in one process (tests) replaces it
        if old.get_name() == "patchforge-stderr":
            logger.removeHandler(old)
    handler = logging.StreamHandler(_Stderr())
    handler.set_name("patchforge-stderr")
    fmt = ("patchforge: %(message)s" if verbosity < 2
           else "patchforge: %(relativeCreated)7.0fms %(name)s: %(message)s")
    handler.setFormatter(logging.Formatter(fmt))
    logger.addHandler(handler)
    logger.propagate = False


class QuietStderr:
    """stderr under `-q` ("errors only: no warnings"): a `warning:` or `note:` a command says
    is dropped, whichever command says it and however (click.echo, echo, a painted line);
    errors, their hints and anything else pass. Each line is said by one write (click.echo
    and echo write the text and its newline at once, then flush), so a write is what is
    judged; so is a write to `buffer`, where click writes through a stream of its own when
    stderr's encoding is ASCII."""

    QUIETED = ("warning: ", "note: ")

    def __init__(self, stream, *, binary: bool = False) -> None:
        self._stream = stream
        self._binary = binary

    def write(self, text) -> int:
        shown = text.decode("latin-1") if self._binary else text
        if _ANSI_STYLE.sub("", shown).startswith(self.QUIETED):
            return len(text)
        return self._stream.write(text)

    @property
    def buffer(self):
        return QuietStderr(self._stream.buffer, binary=True)

    def __getattr__(self, name):  # flush, isatty, encoding, fileno: the stream's own
        return getattr(self._stream, name)


class _Stderr:
    """sys.stderr looked up at each write, so a redirected stderr (click's test runner, a
    contextlib redirect) gets the lines, not the stream that was current at start-up."""

    def write(self, text: str) -> None:
        sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


# The version of every `--json` document's format; each document is described by
# patchforge/formats/schemas/<schema>.schema.json, which pins this number.
JSON_SCHEMA_VERSION = 1


def gone_line(fix: dict, color: bool) -> str:
    """The line for a fix kept under upstreamed/ whose change the revision lacks (a
    `gone_upstream` entry, not a proven revert): it is in no overlay, and needs attention."""
    if fix["kind"] == "before-landing":
        return paint(f"before its landing (needs attention): {fix['message']}", "yellow", color)
    if fix["kind"] == "base-unserved":
        return paint(f"not judged (needs attention): {fix['message']}", "yellow", color)
    return paint(f"taken out upstream (needs attention): {fix['message']}", "yellow", color)


# Whether this command has written its JSON document (an error after it adds none).
_emitted_json = False


def emit_json(document: dict, schema: str) -> None:
    """Exactly one JSON document on stdout, carrying `schema_version` (see formats/schemas/).

    The document is UTF-8 whatever bytes a patch holds: a byte that is not UTF-8 (read with
    surrogateescape) is written as its `\\udcXX` escape, never raw, which no JSON reader
    would take; surrogateescape encoding of the value gives the byte back. On a stream in
    another encoding the document is ASCII (every other character escaped), which is UTF-8."""
    global _emitted_json
    text = json_text({"schema_version": JSON_SCHEMA_VERSION, **document})
    _emitted_json = True
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    if not text.isascii() and not _writes_utf8(sys.stdout):
        # A stream in another encoding (an ISO-8859-1 locale) would write the document in it,
        # which no JSON reader takes: every character past ASCII as JSON's own escape instead.
        text = re.sub("[^\x00-\x7f]", _json_escape, text)
    echo(text)


def _writes_utf8(stream) -> bool:
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def _json_escape(match) -> str:
    """JSON's `\\uXXXX` for one character, a surrogate pair past U+FFFF."""
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def forget_json() -> None:
    """A new command (main() called again in one process) has written no document yet."""
    global _emitted_json
    _emitted_json = False


def emit_json_error(message: str, *, exit_code: int, hint: str | None = None,
                    path: str | None = None, line: int | None = None) -> None:
    """A command run with `--json` that ends in an error before its document: the error as
    the one document on stdout (error.schema.json), so that a script reading stdout gets JSON
    whatever happened; stderr says the same for a person. Nothing when the command's own
    document is out already (a rebase's stop writes its document, then exits 3)."""
    if _emitted_json:
        return
    error: dict = {"message": message, "exit_code": exit_code, "hint": hint}
    if path is not None:
        error["file"] = path
        error["line"] = line
    emit_json({"error": error}, "error")


class _NotPlain(Exception):
    """A value json_text leaves to the json module (a key that is not a string, another type)."""


def json_text(document) -> str:
    """`json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)`, character for
    character, made by one recursive function: with `indent` the json module encodes in
    Python generators, a yield per token (about 10 ms for the status document of a 93-patch
    series, 260 KB), where this appends each token to one list and leaves the strings to the
    json module's own C encoder. Anything but dicts with string keys, lists, tuples, strings,
    numbers, booleans and None is left to json.dumps, whole."""
    import json
    from json.encoder import encode_basestring

    out: list[str] = []
    append = out.append
    # Per nesting level: what opens the first item, what comes between items, what closes.
    layout: list[tuple[str, str, str]] = []

    def put(value, level: int) -> None:
        # The order of json.encoder's tests: a bool is an int, an IntEnum an int.
        if isinstance(value, str):
            append(encode_basestring(value))
        elif value is None:
            append("null")
        elif value is True:
            append("true")
        elif value is False:
            append("false")
        elif isinstance(value, int):
            append(int.__repr__(value))
        elif isinstance(value, float):
            append(_json_float(value))
        elif isinstance(value, (list, tuple, dict)):
            if not value:
                append("{}" if isinstance(value, dict) else "[]")
                return
            while len(layout) <= level:
                inner = "\n" + "  " * (len(layout) + 1)
                layout.append((inner, "," + inner, "\n" + "  " * len(layout)))
            first, between, last = layout[level]
            if isinstance(value, dict):
                append("{" + first)
                for k, (key, item) in enumerate(sorted(value.items())):
                    if not isinstance(key, str):
                        raise _NotPlain
                    if k:
                        append(between)
                    append(encode_basestring(key))
                    append(": ")
                    put(item, level + 1)
                append(last + "}")
            else:
                append("[" + first)
                for k, item in enumerate(value):
                    if k:
                        append(between)
                    put(item, level + 1)
                append(last + "]")
        else:
            raise _NotPlain

    try:
        put(document, 0)
    except _NotPlain:
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
    return "".join(out)


def _json_float(value: float) -> str:
    """A float as json.dumps writes it (allow_nan: NaN, Infinity, -Infinity)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def paint(text: str, color: str | None, enabled: bool, bold: bool = False) -> str:
    if not enabled or not (color or bold):
        return text
    import click

    return click.style(text, fg=color, bold=bold)


def table(rows: list[list[str]], header: list[str] | None = None, *, colors=None,
          enabled=False) -> str:
    """A plain aligned table; `colors[i]` may name a colour for column i's values."""
    all_rows = ([header] if header else []) + rows
    if not all_rows:
        return ""
    # A cell is one line: a newline in it (a symlink's target in an image or tree being
    # checked, whoever built it) put the rest on a line of its own, `::error::...`, which a CI
    # runner reading stdout obeys as a workflow command.
    all_rows = [[neutralize(cell).replace("\n", "\\n") for cell in row] for row in all_rows]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]))]
    out = []
    for index, row in enumerate(all_rows):
        cells = []
        for column, cell in enumerate(row):
            padded = cell.ljust(widths[column]) if column < len(row) - 1 else cell
            if header and index == 0:
                padded = paint(padded, None, enabled, bold=True)
            elif colors and colors.get(column):
                padded = paint(padded, colors[column](cell), enabled)
            cells.append(padded)
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


# Whether a progress line (`Progress`, `TransferDisplay`) stands unfinished on stderr, the
# terminal's cursor at its end: a message written now would run on from it.
_progress_line_open = False


def _progress_line(text: str) -> None:
    """Write (or rewrite in place) the progress line on the terminal that stderr is."""
    global _progress_line_open
    sys.stderr.write(text[:200])
    sys.stderr.flush()
    _progress_line_open = text != "\r\x1b[K"


def quieted() -> bool:
    """Whether this command runs under `-q` (errors only: configure wrapped stderr)."""
    return isinstance(sys.stderr, QuietStderr)


def say_info(text: str) -> None:
    """A line on stderr that is no error, nor an error's hint, and carries no `warning:` or
    `note:` for QuietStderr to tell it by (a `NOT CHECKED` note, what was fetched, a bump's
    title, a hint where nothing is wrong): dropped under `-q`, which says errors only."""
    if not quieted():
        echo(text, err=True)


def say_apart(text: str) -> None:
    """`text` as a line of its own on stderr: after a progress line (left standing, ended),
    not run on from it. For what a command says while it waits in the middle of its work
    (that it waits; that it cannot lock the project): dropped under `-q`, as no error."""
    global _progress_line_open
    if quieted():
        return
    if _progress_line_open:
        sys.stderr.write("\n")
        _progress_line_open = False
    echo(text, err=True)


class Progress:
    """A one-line progress indicator on stderr; silent unless stderr is a terminal, and
    under -q (errors only)."""

    def __init__(self, label: str, total: int | None = None) -> None:
        self.label = label
        self.total = total
        self.enabled = sys.stderr.isatty() and not quieted()
        self.count = 0
        self._last = 0.0

    def advance(self, what: str = "") -> None:
        self.count += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.05 and self.count != self.total:
            return
        self._last = now
        total = f"/{self.total}" if self.total else ""
        _progress_line(f"\r\x1b[K{self.label} {self.count}{total} {what}")

    def done(self) -> None:
        if self.enabled:
            _progress_line("\r\x1b[K")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.done()


def page(data: bytes, *, enabled: bool = True) -> None:
    """Write `data` to stdout, through a pager when stdout is a terminal (as git does):
    $PATCHFORGE_PAGER, else $PAGER, else `less` with LESS=FRX (quit when it fits one screen,
    keep colours, leave the text on the screen). Bytes go through unchanged."""
    import subprocess

    from patchforge.tempfiles import which

    pager = os.environ.get("PATCHFORGE_PAGER") or os.environ.get("PAGER") or \
        ("less" if which("less") else "")
    if not enabled or not sys.stdout.isatty() or pager.strip() in ("", "cat"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    try:
        # The user's own pager command, run by the shell as git runs it.
        proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        sys.stdout.buffer.write(data)
        return
    assert proc.stdin is not None  # stdin=PIPE
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager early
        pass
    if proc.wait() in (126, 127):
        # The shell could not run it (not found, not executable): nothing was shown, and
        # the command would end with exit 0 and a bare "not found". Show it without a pager.
        echo(f"patchforge: warning: the pager {pager!r} could not be run (from "
                   f"{'PATCHFORGE_PAGER' if os.environ.get('PATCHFORGE_PAGER') else 'PAGER'}); "
                   "showing without a pager", err=True)
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


DIFF_COLORS = ((b"+++", None), (b"---", None), (b"+", "green"), (b"-", "red"), (b"@@", "cyan"),
               (b"diff --git", None))


def color_diff(diff: bytes, enabled: bool) -> bytes:
    """A diff with git's colours (added green, removed red, hunk headers cyan) when enabled."""
    if not enabled:
        return diff
    out = []
    for line in diff.splitlines(keepends=True):
        for prefix, color in DIFF_COLORS:
            if line.startswith(prefix):
                if color is None:
                    out.append(b"\x1b[1m" + line.rstrip(b"\n") + b"\x1b[m" +
                               (b"\n" if line.endswith(b"\n") else b""))
                else:
                    code = {"green": b"32", "red": b"31", "cyan": b"36"}[color]
                    out.append(b"\x1b[" + code + b"m" + line.rstrip(b"\n") + b"\x1b[m" +
                               (b"\n" if line.endswith(b"\n") else b""))
                break
        else:
            out.append(line)
    return b"".join(out)


class TransferDisplay:
    """A store.gitstore.TransferProgress: how the store's long work (a wheel's download, its
    import) shows on stderr. A line rewritten in place with the bytes done, only when stderr is
    a terminal and not under -q (errors only); with -v, one line per phase wherever stderr
    goes. Plugged into UpstreamStore.progress by the commands that may fetch (fetch, status,
    rebase, upstream)."""

    def __init__(self, verbosity: int = 0) -> None:
        self.live = sys.stderr.isatty() and verbosity >= 0
        self.verbose = verbosity > 0
        self.text = ""
        self._last = 0.0
        self._shown = False

    def step(self, text: str) -> None:
        self._clear()
        if self.verbose:
            sys.stderr.write(f"patchforge: {text}\n")
        if self.live:
            _progress_line(f"\r\x1b[K{text}")
            self._shown = True
        sys.stderr.flush()
        self.text, self._last = text, 0.0

    def advance(self, done: int, total: int | None) -> None:
        if not self.live:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and (total is None or done < total):
            return
        self._last = now
        if total:
            amount = f"{100 * done // total}% ({done / 1e6:.0f} of {total / 1e6:.0f} MB)"
        else:
            amount = f"{done / 1e6:.1f} MB"
        _progress_line(f"\r\x1b[K{self.text}: {amount}")
        self._shown = True

    def _clear(self) -> None:
        if self._shown:
            _progress_line("\r\x1b[K")
            self._shown = False

    def waiting(self, text: str) -> None:
        self._clear()
        say_apart(f"patchforge: {text}")

    def done(self) -> None:
        self._clear()
