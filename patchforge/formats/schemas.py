"""The JSON Schemas shipped in the package, and validation with dotted paths to the bad value.

jsonschema is imported here only, and only when something is validated (it is slow to load), so the
hot read paths use typed getters and the schemas guard every write and every `--json` document.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from patchforge.errors import InputError

SCHEMA_NAMES = ("lock", "manifest", "status", "rebase", "list", "show", "verify", "verify-image",
                "lint", "overlays", "journal", "bump", "fetch", "upstreams", "pin", "check",
                "ledger", "refresh", "pr")


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    text = resources.files("patchforge.formats").joinpath(f"schemas/{name}.schema.json").read_text()
    return json.loads(text)


def dotted(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validation_errors(instance, name: str) -> list[str]:
    """Every schema violation as "dotted.path: message", best first."""
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(load_schema(name))
    validator = validator_cls(load_schema(name), format_checker=validator_cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (list(e.absolute_path), e.message))
    return [f"{dotted(e.absolute_path)}: {e.message}" for e in errors]


def validate(instance, name: str, *, source: str) -> None:
    errors = validation_errors(instance, name)
    if errors:
        raise InputError(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""),
                         path=source)
