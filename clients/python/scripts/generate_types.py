"""Write `kindmem_client/types.py` from kindmem's OpenAPI schema.

    python clients/python/scripts/generate_types.py http://127.0.0.1:8000/v1/schema?format=json
    python clients/python/scripts/generate_types.py schema.json

Every component of the schema becomes a `TypedDict` (objects) or a `Literal` alias (enums):
`FactOutput` is `Fact`, `ScopeInputRequest` is `ScopeInput`, `SubjectRequest` is
`SubjectInput`. tests/clients/test_python_client.py regenerates it from the served schema and
fails when the committed module differs, so the client's types follow the API.
"""

from __future__ import annotations

import json
import keyword
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parent.parent / "src" / "kindmem_client" / "types.py"

HEADER = '''"""The API's shapes, as typed dicts: generated from kindmem's OpenAPI schema by
`clients/python/scripts/generate_types.py`; do not edit by hand."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
{names}
]
'''

# drf-spectacular's enum of the null that a nullable choice field may take besides its choices
# (`oneOf: [ReviewEnum, NullEnum]`, `nullable`): said by the `| None` of `nullable`.
NULL_ENUM = "NullEnum"
# Components that repeat another under a second name (the schema hook's shared error shape), or
# that say no type of their own (the null enum).
SKIP = {"Error", NULL_ENUM}
QUOTES = '"' * 3
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def type_name(component: str) -> str:
    if component.endswith("Output") and component != "Output":
        return component.removesuffix("Output")
    if component.endswith("InputRequest"):
        return component.removesuffix("Request")
    if component.endswith("Request"):
        return component.removesuffix("Request") + "Input"
    return component


def annotation(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        text = type_name(schema["$ref"].rsplit("/", 1)[-1])
    elif "allOf" in schema and len(schema["allOf"]) == 1:
        text = annotation(schema["allOf"][0])
    elif "oneOf" in schema:
        null = f"#/components/schemas/{NULL_ENUM}"
        text = " | ".join(annotation(s) for s in schema["oneOf"] if s.get("$ref") != null)
    elif "enum" in schema:
        text = "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"] if v) + "]"
    elif schema.get("type") == "array":
        text = f"list[{annotation(schema.get('items', {}))}]"
    elif schema.get("type") == "object":
        extra = schema.get("additionalProperties")
        value = annotation(extra) if isinstance(extra, dict) and extra else "Any"
        text = f"dict[str, {value}]"
    elif schema.get("type") in SCALARS:
        text = SCALARS[schema["type"]]
    else:
        return "Any"  # any JSON value (a fact's content, a provenance, a payload)
    return f"{text} | None" if schema.get("nullable") else text


def render(schema: dict[str, Any]) -> str:
    """The module's source, formatted as ruff formats it (ruff is in the test extra)."""
    components = schema["components"]["schemas"]
    names = sorted(type_name(c) for c in components if c not in SKIP)
    blocks = [HEADER.format(names="\n".join(f'    "{n}",' for n in names)).rstrip()]
    for component in sorted(components, key=type_name):
        if component in SKIP:
            continue
        body = components[component]
        name = type_name(component)
        if "enum" in body:
            blocks.append(f"{name} = {annotation({'enum': body['enum']})}")
            continue
        lines = [f"class {name}(TypedDict):"]
        # the description's first paragraph (drf-spectacular takes it from the docstring)
        paragraph = " ".join((body.get("description") or "").split("\n\n")[0].split())
        if paragraph:
            lines += ["    " + QUOTES + "\n    ".join(textwrap.wrap(paragraph, 88)) + QUOTES, ""]
        required = set(body.get("required", []))
        properties = body.get("properties", {})
        if not properties:
            lines.append("    pass")
        for prop, prop_schema in properties.items():
            assert prop.isidentifier(), prop
            assert not keyword.iskeyword(prop), prop
            text = annotation(prop_schema)
            if prop not in required:
                text = f"NotRequired[{text}]"
            lines.append(f"    {prop}: {text}")
        blocks.append("\n".join(lines))
    source = "\n\n\n".join(blocks) + "\n"
    formatted = subprocess.run(  # noqa: S603 - this interpreter's ruff, fixed arguments
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    )
    return formatted.stdout


def load(source: str) -> dict[str, Any]:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source) as answer:  # noqa: S310 - an operator's own URL
            return json.load(answer)
    return json.loads(Path(source).read_text())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    TARGET.write_text(render(load(sys.argv[1])))
    print(f"wrote {TARGET}")
