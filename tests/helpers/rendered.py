"""Rendered Markdown as GitHub reads it after rendering: the runs of text it searches for
mentions and issue references, and the text a reader sees (and copies)."""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

# What GitHub makes a mention (`@name`, `@org/team`) or an issue reference (`#12`,
# `owner/repo#12`, `GH-12`) of, found in one run of text outside code and links.
GITHUB_REFERENCE = re.compile(r"(?<![\w/])@[a-z0-9]|#\d|\bGH-\d", re.I)


def text_runs(page: str) -> list[str]:
    """The runs of text of rendered HTML outside code and links, one per text node (a tag or
    a comment ends a run), as GitHub searches them for mentions and references."""
    runs: list[str] = []
    inside: list[str] = []

    class Runs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            inside.append(tag)

        def handle_endtag(self, tag):
            if tag in inside:
                del inside[len(inside) - 1 - inside[::-1].index(tag):]

        def handle_data(self, data):
            if not {"code", "pre", "a"} & set(inside):
                runs.append(data)

    Runs(convert_charrefs=True).feed(page)
    return runs


def shown_text(page: str) -> str:
    """What a reader sees of rendered HTML, and copies: its text, tags and comments gone."""
    return html.unescape(re.sub(r"<!--.*?-->|<[^>]*>", "", page, flags=re.S))
