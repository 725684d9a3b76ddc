"""The console's run log timeline and its Verify button."""

from __future__ import annotations

from django.urls import reverse

from runlog.services import log_payloads_erase
from tests.runlog.conftest import log_entry_append, sql


def timeline_url(run_id: object) -> str:
    return reverse("admin:runlog_logentry_timeline", args=[run_id])


def test_the_timeline_shows_entries_in_order_with_payloads_escaped(admin_client, minted):
    log_entry_append(minted, "turn", text="<script>alert('x')</script>")
    log_entry_append(minted, "tool-call", tool="weather")

    page = admin_client.get(timeline_url(minted.run.id)).content.decode()

    assert "&lt;script&gt;" in page
    assert "<script>alert" not in page
    assert page.index("#1 turn") < page.index("#2 tool-call")
    assert "Chain verified" not in page  # nothing verified until asked


def test_the_verify_button_reports_an_intact_chain(admin_client, minted, five):
    page = admin_client.post(timeline_url(minted.run.id)).content.decode()
    assert "Chain verified: 5 entries" in page
    assert five[-1].entry_hash in page


def test_the_verify_button_reports_where_a_chain_breaks(admin_client, minted, five):
    sql("UPDATE runlog_logentry SET kind = 'note' WHERE id = %s", [five[1].id])
    page = admin_client.post(timeline_url(minted.run.id)).content.decode()
    assert "Chain broken at sequence 2" in page


def test_erased_payloads_show_as_erased(admin_client, minted, five):
    log_payloads_erase(tenant_id=minted.run.tenant_id, run_ids=[minted.run.id])
    page = admin_client.get(timeline_url(minted.run.id)).content.decode()
    assert page.count("Payload erased") == 5
    assert "Ada" not in page


def test_the_entry_list_links_to_the_timeline(admin_client, minted, five):
    page = admin_client.get(reverse("admin:runlog_logentry_changelist")).content.decode()
    assert timeline_url(minted.run.id) in page


def test_the_timeline_needs_a_staff_login(client, minted):
    response = client.get(timeline_url(minted.run.id))
    assert response.status_code == 302
    assert "/login/" in response["Location"]
