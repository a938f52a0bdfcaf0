"""The JSON Schemas shipped in the package, and validation with dotted paths to the bad value;
a value its pattern refuses is said with what the schema says it must be (`x-expected`).

jsonschema is imported here only, and only when something is validated (it is slow to load), so the
hot read paths use typed getters and the schemas guard every write and every `--json` document.
"""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any, NamedTuple

from patchforge.errors import InputError

SCHEMA_NAMES = ("config", "lock", "manifest", "status", "rebase", "list", "show", "verify",
                "verify-image", "lint", "overlays", "journal", "bump", "fetch", "upstreams", "pin",
                "check", "ledger", "refresh", "pr", "error")


def schema_bytes(name: str) -> bytes:
    """The file of schema `name` as shipped in the package, read by the package's own loader
    (as `pkgutil.get_data` reads it: a file, or a member of a zip the package is imported
    from). Not `importlib.resources`: it and the zipfile module it loads cost every command
    that reads a configuration (the schema's digest, config.validate_config_table) 5-6 ms."""
    loader: Any = __spec__.loader  # a SourceFileLoader or zipimporter: both have get_data
    return loader.get_data(os.path.join(os.path.dirname(__file__), "schemas",
                                         f"{name}.schema.json"))


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    return json.loads(schema_bytes(name).decode("utf-8"))


def dotted(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


# What a schema check accepts beyond the schema files themselves (the marker of a configuration
# that passed includes it): 2, a pattern's `$` is the end of the string.
VALIDATION_RULES = b"2"


@lru_cache(maxsize=None)
def _end_anchored(pattern: str) -> re.Pattern:
    """`pattern` as JSON Schema reads it (ECMA-262): its final `$` is the end of the string.
    Python's `$` also matches before a final newline, so `"/opt/site\n"` passed
    `^/[^\x00-\x1f]*$` (install-root) and reached compose.yaml and the Dockerfile."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


@lru_cache(maxsize=None)
def _validator_class(name: str):
    """The validator of schema `name`, its `pattern` keyword read as JSON Schema reads it."""
    import jsonschema

    base = jsonschema.validators.validator_for(load_schema(name))

    def pattern(validator, wanted, instance, schema):
        if validator.is_type(instance, "string") and not _end_anchored(wanted).search(instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {wanted!r}")
    return jsonschema.validators.extend(base, {"pattern": pattern})


def validation_errors(instance, name: str) -> list[str]:
    """Every schema violation as "dotted.path: message", best first."""
    validator_cls = _validator_class(name)
    validator = validator_cls(load_schema(name), format_checker=validator_cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message))
    return [f"{dotted(e.absolute_path)}: "
            f"{_said(e, list(e.absolute_path)) if _expected(e) else e.message}" for e in errors]


class Violation(NamedTuple):
    """A schema violation: where (the path to the offending key or value), the message, and
    `why`, the message's end that says why the value is refused (": it must be ...", or "" when
    the schema says nothing more), for a caller that names the value its own way (an option)."""

    where: list
    message: str
    why: str = ""


def first_violation(instance, name: str) -> Violation | None:
    """The first schema violation, or None.

    The path ends at the offending key itself where jsonschema reports its parent (an unknown
    key, a bad key name), so that a caller can point at the key's line."""
    validator = _validator_class(name)(load_schema(name))
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    error = errors[0]
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        unexpected = re.findall(r"'([^']*)'", error.message.partition("(")[2])
        known = sorted(error.schema.get("properties", {}))
        if unexpected:
            return Violation(path + [unexpected[0]], f"unknown key {unexpected[0]!r}"
                             + (f" (known: {', '.join(known)})" if known else ""))
    if error.validator == "required":
        missing = re.match(r"'([^']*)' is a required property", error.message)
        if missing:
            return Violation(path + [missing.group(1)], "missing (required here)")
    if "propertyNames" in error.schema_path:
        return Violation(path + [error.instance], f"{error.instance!r} is not a valid name "
                         "(letters, digits, '.', '_', '-'; starting with a letter or digit)")
    return Violation(path, _said(error, path), _why(error))


# The keyword that says, in words, what a string refused by its `pattern` (or `not`,
# `minLength`) must be: "'opt/vllm' is not a valid install-root" said nothing of why, and the
# pattern itself is no answer to a reader. Our own keyword, which a JSON Schema validator
# ignores as it ignores any it does not know; every pattern of the schemas of a project's files
# (config, lock, manifest) has one beside it (tests/test_config.py checks that).
EXPECTED = "x-expected"


def _expected(error) -> str | None:
    """What the schema says a value refused by its pattern, `not` or minLength must be."""
    if error.validator not in ("pattern", "not", "minLength") or \
            not isinstance(error.schema, dict):
        return None
    return error.schema.get(EXPECTED)


def _said(error, path: list) -> str:
    """The message of `error` at `path`: for a value its schema refuses by pattern, `not` or
    minLength, which value, the key it is for, why where one reason is plain, and what it must
    be (the schema's EXPECTED); jsonschema's own message otherwise."""
    if error.validator not in ("pattern", "not", "minLength"):
        return error.message
    return f"{error.instance!r} is not a valid {_kind_at(path)}{_why(error)}"


def _why(error) -> str:
    """Why a value failed its pattern, `not` or minLength, as a message's end: the plain
    reason where there is one (empty, a control character), then what it must be."""
    if error.validator not in ("pattern", "not", "minLength"):
        return ""
    why = _why_refused(error.instance)
    expected = _expected(error)
    if expected:
        why += f"{';' if why else ':'} it must be {expected}"
    return why


def _kind_at(path: list) -> str:
    """What the value at `path` is, for a message: its key (`compose-service`), or for an item
    of a list the list's key (`artifacts entry`), never the item's index."""
    if not path:
        return "value"
    if isinstance(path[-1], int):
        keys = [key for key in path if isinstance(key, str)]
        return f"{keys[-1]} entry" if keys else "list entry"
    return str(path[-1])


def _why_refused(instance: object) -> str:
    """The reason a string failed its pattern where one reason is plain to say: a control
    character (a tab or a newline in a name does not show in the message's quoting as one)."""
    if isinstance(instance, str):
        if not instance:
            return ": it is empty"
        bad = next((ch for ch in instance if ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0), None)
        if bad is not None:
            return f": it holds a control character (U+{ord(bad):04X})"
    return ""


def validate(instance, name: str, *, source: str) -> None:
    errors = validation_errors(instance, name)
    if errors:
        raise InputError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
                         path=source)
