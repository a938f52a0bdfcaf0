"""Text from patches and files made safe to place in the Markdown patchforge writes
(series/PATCHES.md, a pull request's PR.md).

GitHub renders raw HTML in Markdown: a description holding `<!--` hides everything after it, a
`<details>` or `<img>` changes the page. `escape_html` turns every `<` that would open a tag or
a comment into `&lt;` (which renders as `<`), outside code: fenced blocks and inline code spans
show their text literally and are left alone, and so are autolinks (`<https://...>`).
Text another party chose (a registry's, a forge's answer), which no reader wants rendered at
all, is shown exactly by `literal_text` (everything escaped) or `literal_span` (a code span).
"""
from __future__ import annotations

import re

from patchforge.patterns import on_first_use

_FENCE = on_first_use(r"^ {0,3}(`{3,}|~{3,})")
_AUTOLINK = on_first_use(r"<(https?|mailto):[^\s<>]*>", re.I)
_CODE_SPAN = on_first_use(r"(`+)(.+?)\1", re.S)


def escape_html(text: str) -> str:
    if "<" not in text:
        return text  # only a `<` is ever escaped (most text from patches has none)
    out, fence = [], None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if match:
            fence = match.group(1)
            out.append(line)
            continue
        out.append(_escape_line(line))
    return "\n".join(out)


def _escape_line(line: str) -> str:
    parts, last = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts.append(_escape_plain(line[last:span.start()]))
        parts.append(span.group())
        last = span.end()
    parts.append(_escape_plain(line[last:]))
    return "".join(parts)


def _escape_plain(text: str) -> str:
    parts, last = [], 0
    for link in _AUTOLINK.finditer(text):
        parts.append(text[last:link.start()].replace("<", "&lt;"))
        parts.append(link.group())
        last = link.end()
    parts.append(text[last:].replace("<", "&lt;"))
    return "".join(parts)


def code_span(text: str) -> str:
    """`text` as an inline code span that nothing in it can end early: CommonMark ends a span
    at the next run of as many backticks as opened it, so it is opened by a run longer than
    any inside (a path like ``x``<img src=y>``.py`` ended the span at its own backticks and put
    the rest, HTML included, outside code). A text with a backtick is padded with a space at
    each end, which CommonMark takes away, so one at either end is shown."""
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (_longest_backticks(text) + 1)
    return f"{ticks} {text} {ticks}"


def code_fence(text: str) -> str:
    """A code fence `text` cannot close: longer than any run of backticks in it (CommonMark
    closes a fence at a line of at least as many). A range-diff quotes patches and git's
    messages, and a line of three backticks in one ended the block there, the rest of the
    range-diff rendered as Markdown (and its `<` as HTML) in the pull request's body."""
    return "`" * max(3, _longest_backticks(text) + 1)


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)



# What text another party chose (a registry's answer, a forge's) can make of Markdown inline:
# a link or image (`[`, `]`), emphasis (`*`, `_`, `~`), code (`` ` ``), HTML and autolinks
# (`<`, `>`), an entity (`&`), a table's cell end (`|`), an escape (`\`); and a URL or `www.`
# GitHub links by itself (its extended autolinks: a backslash before `:` or `.` stops them).
_INLINE = on_first_use(r"[\\`*_\[\]<>&|~]|(?<=[A-Za-z])(?=://)|(?<=\bwww)(?=\.)", re.I)
# At the start of a line, after up to three spaces (CommonMark still reads a block marker
# there): a heading, a quote, a list item, a setext underline.
_LEADING = on_first_use(r"^( {0,3})(?:([#>+=-])|(\d+)(?=[.)]))")
_CONTROL = on_first_use("[\x00-\x1f\x7f-\x9f]")
# What GitHub makes a mention or a cross-reference of, after rendering, in the text it shows:
# `@name` (and `@org/team`) notifies that user or team; `#123`, `owner/repo#123` and `GH-123`
# link that issue or pull request and put a "mentioned this" event on its timeline. No
# Markdown escape stops either: GitHub finds them in the rendered text, where `\@` and `&#64;`
# are already `@` (github/cmark-gfm#181, github/markup#1168). An empty HTML comment after the
# `@`, `#` or `GH-` splits the text GitHub searches, renders as nothing (the page shows
# `@name` and a copy of it is `@name`), and is in the Markdown only: a zero-width space would
# show the same and be copied with the text.
_AUTO_REFERENCE = on_first_use(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9])|#(?=[0-9])"
                               r"|(?<![A-Za-z0-9])GH-(?=[0-9])", re.I)
_NOTHING = "<!-- -->"


def literal_text(text) -> str:
    """`text` as Markdown that shows it exactly and makes nothing of it: every character
    CommonMark or GitHub could take for markup backslash-escaped (which renders as the
    character), line breaks and control characters written visible (`\\x0a`), so it stays one
    line of a table cell or of a quote. For text someone else chose (a registry's error, a
    forge's answer): escaping `<` alone left `[x](url)` a link, `![t](url)` a remote image and
    `## x` after a line break a heading. A mention (`@name`) or an issue reference (`#123`,
    `owner/repo#123`, `GH-123`) GitHub would make of it is stopped by an empty HTML comment
    (_AUTO_REFERENCE): quoted, a pull request's title notified its author and put an event on
    an unrelated issue of the stack's repository."""
    text = _INLINE.sub(lambda m: "\\" + m.group(), str(text))
    text = _LEADING.sub(lambda m: m.group(1) + ("\\" + m.group(2) if m.group(2)
                                                else m.group(3) + "\\"), text, count=1)
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    # Last: its comment's `<` is markup of this escaper's own, never escaped.
    return _AUTO_REFERENCE.sub(lambda m: m.group() + _NOTHING, text)


def literal_span(text, *, cell: bool) -> str:
    """`text` as one code span that shows it whole and renders none of it (code_span), its
    line breaks and control characters written visible (`\\x0a`); in a table `cell`, its
    pipes escaped too (a table ends a cell at one even inside code, and takes `\\|` there for
    `|`; outside a table the backslash would show)."""
    span = code_span(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text)))
    return span.replace("|", "\\|") if cell else span
