"""Which client method calls which route: every `(method, path)` of kindmem's `/v1/schema`.

tests/clients/test_python_client.py holds this table against the served schema (a route the
API has and the table lacks fails CI) and checks that each method sends what it says here.
"""

from __future__ import annotations

OPERATIONS: dict[tuple[str, str], str] = {
    ("GET", "/v1/me"): "me",
    ("GET", "/v1/capabilities"): "capabilities",
    ("POST", "/v1/runs"): "mint_run",
    ("GET", "/v1/facts"): "list_facts",
    ("POST", "/v1/facts"): "create_fact",
    ("POST", "/v1/facts/search"): "search_facts",
    ("GET", "/v1/facts/export"): "export_facts",
    ("POST", "/v1/facts/import"): "import_facts",
    ("GET", "/v1/facts/{fact_id}"): "get_fact",
    ("DELETE", "/v1/facts/{fact_id}"): "delete_fact",
    ("GET", "/v1/facts/{fact_id}/revisions"): "fact_revisions",
    ("POST", "/v1/facts/{fact_id}/supersede"): "supersede_fact",
    ("PATCH", "/v1/facts/{fact_id}"): "patch_fact",
    ("POST", "/v1/facts/{fact_id}/verify"): "verify_fact",
    ("GET", "/v1/facts/{fact_id}/links"): "fact_links",
    ("POST", "/v1/facts/{fact_id}/links"): "link_facts",
    ("PATCH", "/v1/facts/{fact_id}/links/{link_id}"): "update_link",
    ("DELETE", "/v1/facts/{fact_id}/links/{link_id}"): "delete_link",
    ("POST", "/v1/remember"): "remember",
    ("GET", "/v1/approvals"): "list_approvals",
    ("POST", "/v1/approvals/{approval_id}/approve"): "approve",
    ("POST", "/v1/approvals/{approval_id}/reject"): "reject",
    ("POST", "/v1/approvals/{approval_id}/verify"): "approve_and_verify",
    ("GET", "/v1/conversations/{conversation_id}/messages"): "list_messages",
    ("POST", "/v1/conversations/{conversation_id}/messages"): "append_messages",
    ("DELETE", "/v1/conversations/{conversation_id}/messages"): "clear_messages",
    ("DELETE", "/v1/conversations/{conversation_id}/messages/{sequence}"): "delete_message",
    ("POST", "/v1/conversations/{conversation_id}/extract"): "extract",
    ("GET", "/v1/conversations/{conversation_id}/extract"): "extractions",
    ("POST", "/v1/recall"): "recall",
    ("GET", "/v1/runs/{run_id}/log"): "read_log",
    ("POST", "/v1/runs/{run_id}/log"): "append_log",
    ("GET", "/v1/runs/{run_id}/log/verify"): "verify_log",
    ("POST", "/v1/erasures"): "start_erasure",
    ("GET", "/v1/erasures/{erasure_id}"): "get_erasure",
    ("POST", "/v1/subject-access-requests"): "request_access_export",
    ("GET", "/v1/subject-access-requests/{request_id}"): "get_access_request",
    ("GET", "/v1/subject-access-requests/{request_id}/download"): "download_access_export",
    ("GET", "/v1/audit"): "list_audit",
    ("GET", "/v1/webhooks"): "list_webhooks",
    ("POST", "/v1/webhooks"): "create_webhook",
    ("DELETE", "/v1/webhooks/{endpoint_id}"): "delete_webhook",
}

# The pages above that have an iterator over every item.
ITERATORS: dict[str, str] = {
    "list_facts": "iter_facts",
    "list_approvals": "iter_approvals",
    "read_log": "iter_log",
    "list_audit": "iter_audit",
}
