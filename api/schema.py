"""OpenAPI post-processing: every operation documents the errors any request can meet."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "details": {"nullable": True},
    },
    "required": ["code", "message", "details"],
}
# Any authenticated route can answer these, whatever its own logic: bad input or body, no or a
# bad credential, a role it lacks, a missing row, a wrong method, a body too large, a wrong
# content type, the write throttle.
COMMON_ERRORS = {
    "400": "validation-error: the request is not valid",
    "401": "unauthenticated: no credential, or a bad, revoked or expired one",
    "403": "forbidden: this credential may not do that",
    "404": "not-found / fact-not-found: no such resource, or not one this credential may read",
    "405": "method-not-allowed",
    "409": "conflict, retention-violation or erasure-in-progress",
    "413": "request-too-large",
    "415": "unsupported-media-type",
    "429": "rate-limited (see Retry-After)",
    "503": "embedding-unavailable, or unavailable: the database is saturated or out of reach"
    " (see Retry-After)",
}
# Any operation at all, the schema's own included: gunicorn refuses these before kindmem sees
# the request, in the same shape (config/gunicorn_conf.py has the limits).
SERVER_ERRORS = {
    "414": "uri-too-long: the request line is over the web server's limit",
    "431": "headers-too-large: a header, or the number of headers, is over the limit",
}


def add_common_errors(result: dict[str, Any], generator: Any, request: Any, public: Any) -> Any:
    """drf-spectacular POSTPROCESSING_HOOK."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            common = {} if path.endswith(("/schema", "/docs")) else COMMON_ERRORS
            for code, description in {**common, **SERVER_ERRORS}.items():
                operation["responses"].setdefault(
                    code,
                    {
                        "description": description,
                        "content": {"application/json": {"schema": ERROR_REF}},
                    },
                )
    return result


class BearerScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer <API key or run token>` in the schema (and the docs' Authorize)."""

    target_class = "kindmem.authentication.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (kmk_...) or a run token (kmr_...).",
        }
