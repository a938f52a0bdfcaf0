"""How a count reads in a message: "1 file", "3 files", never "1 files" or "file(s)"."""
from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, its plural (`plural`, else noun + "s") for any count but 1."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
