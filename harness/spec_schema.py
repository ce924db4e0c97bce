"""The JSON Schema (draft 2020-12) of ``spec.json``, generated from the spec's field table.

Each ``RunSpec`` field becomes a property with its type, bounds, choices or pattern, default and help;
the environment facts ``build_spec`` records are described beside them. The schema is committed as
``schemas/spec.schema.json`` for readers outside Python; a test keeps the file equal to ``json_schema()``.
Regenerate it with ``python -m harness.spec_schema > harness/schemas/spec.schema.json``.
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

from harness.spec import DEFAULTS, OPTIONS, SPEC_VERSION, field_kind

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SPEC_SCHEMA_PATH = SCHEMA_DIR / "spec.schema.json"
RESULTS_SCHEMA_PATH = SCHEMA_DIR / "results.schema.json"


def _field_schema(name: str) -> dict[str, Any]:
    opt = OPTIONS[name]
    base, nullable = field_kind(name)
    schema: dict[str, Any] = {"description": opt.help}
    if typing.get_origin(base) is tuple:
        schema.update(type="array", items={"type": "string", "enum": list(opt.choices or ())}, uniqueItems=True)
    elif opt.choices is not None:
        schema["enum"] = list(opt.choices) + ([None] if nullable else [])
    else:
        json_type = {bool: "boolean", int: "integer", float: "number", str: "string"}[base]
        schema["type"] = [json_type, "null"] if nullable else json_type
        if opt.minimum is not None:
            schema["exclusiveMinimum" if opt.exclusive_minimum else "minimum"] = opt.minimum
        if opt.maximum is not None:
            schema["maximum"] = opt.maximum
        if opt.pattern is not None:
            schema["pattern"] = opt.pattern
    schema["default"] = DEFAULTS[name]
    return schema


def _environment_schema() -> dict[str, Any]:
    text_or_null = {"type": ["string", "null"]}
    return {
        "spec_version": {"description": "version of this schema", "type": "integer", "minimum": 1,
                         "maximum": SPEC_VERSION},
        "git_commit": {"description": "git commit of the harness", **text_or_null},
        "git_dirty": {"description": "whether the work tree had uncommitted changes", "type": ["boolean", "null"]},
        "image": {"description": "tag of the node image (docker backend)", **text_or_null},
        "python": {"description": "Python version", **text_or_null},
        "kraftcheck_version": {"description": "installed kraftcheck version", **text_or_null},
        "created_utc": {"description": "when the spec was built (ISO 8601, UTC)", **text_or_null},
        "argv": {"description": "the command line that built the spec",
                 "type": ["array", "null"], "items": {"type": "string"}},
        "versions": {"description": "versions of Python, the clients and key libraries (null: not installed)",
                     "type": "object", "additionalProperties": text_or_null},
    }


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``spec.json``, generated from the field table."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "kraftcheck run spec (spec.json)",
        "description": "Every option of one run (replayed by kraftcheck run --replay) and facts about the "
                       "environment it ran in (recorded, not replayed). Generated from the field table of harness/spec.py.",
        "type": "object",
        "properties": {**{name: _field_schema(name) for name in DEFAULTS}, **_environment_schema()},
        "required": [*DEFAULTS, "spec_version"],
        "additionalProperties": False,
    }


def schema_text() -> str:
    """``json_schema()`` as the text of the committed ``schemas/spec.schema.json``."""
    return json.dumps(json_schema(), indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
