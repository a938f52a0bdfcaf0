"""Checking a document against a published JSON Schema, the schema itself checked first."""
from __future__ import annotations

import json

from helpers.env import REPO_ROOT


def schema_errors(instance, name: str) -> list[str]:
    """The messages of every way `instance` breaks patchforge/formats/schemas/NAME.schema.json."""
    import jsonschema

    schema = json.loads((REPO_ROOT / "patchforge/formats/schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(instance)]
