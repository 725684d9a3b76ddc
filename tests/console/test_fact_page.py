"""The console's fact page (facts/fact_page.py): what a fact says, for people; its revisions
with a word diff of each change; trust and review as badges; the approval, run and run log
entries behind each revision; everyone and everything by name, linked to their pages, in a
few queries whatever the history's length; a 404 for anything not the staff member's."""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from facts.models import Link, Revision, Subject
from facts.services import fact_create, fact_supersede
from kindmem.models import ApiKey
from tests import factories
from tests.approvals.conftest import declare, remember
from tests.console.conftest import fact_history_plant, staff_create

pytestmark = pytest.mark.django_db

# What the page may cost, whatever the number of revisions and links: the session and user,
# the fact, its revisions with their runs, their subjects, its links and the linked facts'
# current text, one query per kind of name, and the audit event (its savepoint, lock, insert).
FACT_PAGE_QUERIES = 20


def page_url(fact_id: object) -> str:
    return reverse("admin:facts_fact_change", args=[fact_id])


def signed_in(user: object) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def visible_text(html: str) -> str:
    """The page as read: no tags, so no attribute (href, title) counts."""
    return re.sub(r"<[^>]+>", " ", html)


def revision_item(html: str, version: int) -> str:
    match = re.search(
        rf'<li class="fact-revision[^"]*" id="revision-{version}".*?</li>', html, re.S
    )
    assert match, f"no v{version} on the page"
    return match.group(0)


def test_the_fact_page_shows_each_change_as_a_word_diff_newest_first(api, world):
    # given a fact the agent wrote and changed, then a reviewer approved and verified
    history = fact_history_plant(api, world, changes=2)
    superuser = staff_create(world, "facts", "superuser")
    # when staff open its page
    response = signed_in(superuser).get(page_url(history.fact_id))
    # then every revision is there, newest first, with what it says now on top
    assert response.status_code == 200
    html = response.content.decode()
    versions = [int(v) for v in re.findall(r'class="fact-revision[^"]*" id="revision-(\d+)"', html)]
    assert versions == [5, 4, 3, 2, 1]
    assert "Always send_email to Ada before she orders." in html.split('id="fact-history"')[0]
    # and each change is marked word by word against the version before it
    v2 = revision_item(html, 2)
    assert "changed from v1" in v2
    assert (
        "Ada prefers<ins> green</ins> tea in the <del>morning</del><ins>evening, take 0</ins>."
        in v2
    )
    v3 = revision_item(html, 3)
    assert "<del>green tea</del><ins>black coffee</ins>" in v3
    assert "<del>0</del><ins>1</ins>" in v3
    # a revision that changed trust, not words, says so; the first one is the first
    assert "the same words as v4" in revision_item(html, 5)
    assert "the first version" in revision_item(html, 1)
    assert "<ins>" not in revision_item(html, 1)


def test_trust_and_review_state_are_badges_and_each_revision_links_what_caused_it(api, world):
    history = fact_history_plant(api, world, changes=1)
    superuser = staff_create(world, "facts", "superuser")
    html = signed_in(superuser).get(page_url(history.fact_id)).content.decode()
    approval_url = reverse("admin:approvals_approval_change", args=[history.approval_id])
    timeline = reverse("admin:runlog_logentry_timeline", args=[history.run.pk])
    # the fact: verified, current, and reviewed (the approval behind it, linked)
    badges = html.split('id="fact-badges"')[1].split("</div>")[0]
    assert 'km-trust-verified" title="verified: a person with the right checked it">verified<' in (
        badges
    )
    assert 'km-state-approved">current<' in badges
    assert f'href="{approval_url}"' in badges
    assert "review: verified" in badges
    # the revision that waited: its approval; the superseded ones: how they ended
    waited = revision_item(html, 3)
    assert f'href="{approval_url}"' in waited
    assert ">unverified<" in waited
    assert 'title="unverified: an agent remembered it"' in waited
    assert 'km-state-ended">superseded<' in waited
    # each agent revision: its run (the run's log), and the log entry that caused it
    for version, entry in ((1, history.entries[0]), (2, history.entries[1])):
        item = revision_item(html, version)
        assert f'href="{timeline}"' in item
        assert f'href="{timeline}#entry-{entry.sequence}"' in item
        assert f"#{entry.sequence} tool-call of Support Bot" in item
    # and the run log timeline has that anchor to land on
    run_log = signed_in(superuser).get(timeline).content.decode()
    assert f'id="entry-{history.entries[1].sequence}"' in run_log


def badge_labels(html: str) -> list[str]:
    return [label.strip() for label in re.findall(r'class="km-badge[^"]*"[^>]*>([^<]*)<', html)]


def reviews_in(html: str) -> list[str]:
    """The badges of `html` that speak of review."""
    return [label for label in badge_labels(html) if "review" in label]


@pytest.mark.parametrize("decision", [None, "reject", "approve", "verify"])
def test_the_fact_page_says_a_revisions_review_in_one_badge(api, world, decision):
    # given a memory that waited for review, left waiting or decided
    declare(world.agent)
    run = factories.run_create(world.app, world.project, agent=world.agent)
    reviewer = staff_create(world, "one-badge", "reviewer")
    waited = remember(api, run, text="Always greet Ada in Spanish.").json()
    if decision:
        api.post(
            f"/v1/approvals/{waited['approval_id']}/{decision}",
            {},
            format="json",
            **factories.user_key_create(reviewer).headers,
        )
    # when staff open the fact's page
    html = signed_in(reviewer).get(page_url(waited["fact"]["id"])).content.decode()
    # then the fact and the revision that waited each say how its review stands once
    status = {None: "pending", "reject": "rejected", "approve": "approved", "verify": "verified"}
    badges = html.split('id="fact-badges"')[1].split("</div>")[0]
    assert reviews_in(badges) == [f"review: {status[decision]}"]
    assert reviews_in(revision_item(html, 1)) == [f"review: {status[decision]}"]
    # and where it stands otherwise is a badge of its own: current, or how it ended
    ends = {None: [], "reject": [], "approve": ["current"], "verify": ["superseded"]}
    assert [b for b in badge_labels(revision_item(html, 1)) if "review" not in b][1:] == (
        ends[decision]
    )


def test_people_agents_projects_and_keys_are_named_not_shown_by_id(api, world):
    # given a fact whose revisions name the agent, the reviewer, the app key, the project
    history = fact_history_plant(api, world, changes=1, links=1)
    superuser = staff_create(world, "facts", "superuser")
    html = signed_in(superuser).get(page_url(history.fact_id)).content.decode()
    text = visible_text(html)
    app_key = ApiKey.objects.get(pk=world.app.key.pk)
    # then each is read by name ...
    assert "Support Bot" in text
    assert history.reviewer.username in text
    assert world.project.name in text
    assert f"{app_key.name} (app key)" in text
    assert "a run of Support Bot" in text
    # ... never by id, which is there on hover only
    for an_id in (history.reviewer.pk, world.project.pk, app_key.pk, history.run.pk):
        assert str(an_id) not in text, an_id
        assert (
            f'title="{an_id}"' in html or f'title="user:{an_id}"' in html or (f":{an_id}" in html)
        )
    # and each name links to its page: the person, the project, the agent, the key
    person_page = reverse("admin:privacy_person")
    assert f'href="{person_page}?subject=user%3A{history.reviewer.pk}' in html
    assert f'href="{person_page}?subject=participant%3Ap-ada' in html
    assert f'href="{reverse("admin:kindmem_project_change", args=[world.project.pk])}"' in html
    assert f'href="{reverse("admin:kindmem_agent_change", args=[world.agent.pk])}"' in html
    assert f'href="{reverse("admin:kindmem_apikey_change", args=[app_key.pk])}"' in html
    # and the linked fact by its type, what it says, and its page
    [linked] = history.linked
    links = html.split('id="fact-links"')[1]
    assert f'href="{page_url(linked)}"' in links
    assert "Ada&#x27;s order number 0 came with the wrong drink." in links


def test_a_reviewer_reads_names_but_gets_links_only_to_pages_their_role_opens(api, world):
    history = fact_history_plant(api, world, changes=1)
    reviewer = staff_create(world, "facts", "reviewer")
    response = signed_in(reviewer).get(page_url(history.fact_id))
    assert response.status_code == 200
    html = response.content.decode()
    # the run, the agent and the key are named, as text: a reviewer opens none of their pages
    assert "Support Bot" in visible_text(html)
    assert reverse("admin:runlog_logentry_timeline", args=[history.run.pk]) not in html
    assert reverse("admin:kindmem_agent_change", args=[world.agent.pk]) not in html
    # the approval and the people are theirs to open
    assert reverse("admin:approvals_approval_change", args=[history.approval_id]) in html
    assert f"{reverse('admin:privacy_person')}?subject=participant%3Ap-ada" in html


def test_content_is_text_for_people_and_agent_markup_is_escaped_in_content_and_diff(world):
    # given a fact whose text is markup, superseded by other markup, and a structured fact
    app = world.app.principal
    scope = {"project_id": str(world.project.id), "participant_id": "p-mal"}
    first = fact_create(principal=app, type="note", content="<b>hi</b> there", scope=scope)
    fact_supersede(
        principal=app,
        fact_id=first.revision.fact_id,
        content="<script>alert(1)</script> there",
    )
    profile = fact_create(
        principal=app,
        type="profile",
        content={"plan": "Pro", "seats": 5, "notes": "<i>vip</i>"},
        scope=scope,
    )
    fact_supersede(
        principal=app,
        fact_id=profile.revision.fact_id,
        content={"plan": "Team", "seats": 12, "notes": "<i>vip</i>"},
    )
    client = signed_in(staff_create(world, "facts", "superuser"))
    # when staff open the first: no markup of the agent's is live, in the content or the diff
    html = client.get(page_url(first.revision.fact_id)).content.decode()
    page = html.split('id="fact-page"')[1]
    assert "<script>" not in page
    assert "<b>" not in page
    changed = revision_item(html, 2)
    assert (
        "&lt;<del>b&gt;hi&lt;/b</del><ins>script&gt;alert(1)&lt;/script</ins>&gt; there" in changed
    )
    assert "<b>hi</b> there" not in revision_item(html, 1)
    assert "&lt;b&gt;hi&lt;/b&gt; there" in revision_item(html, 1)
    # when they open the structured one: a definition list now, its changes word by word
    html = client.get(page_url(profile.revision.fact_id)).content.decode()
    now = html.split('id="fact-now"')[1].split("</section>")[0]
    assert '<dt>plan</dt><dd class="km-text">Team</dd>' in now
    assert '<dt>seats</dt><dd class="km-text">12</dd>' in now
    assert "&lt;i&gt;vip&lt;/i&gt;" in now
    changed = revision_item(html, 2)
    assert "plan: <del>Pro</del><ins>Team</ins>" in changed
    assert "seats: <del>5</del><ins>12</ins>" in changed


def fact_page_queries(client: Client, fact_id: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(page_url(fact_id))
    assert response.status_code == 200
    return len(queries)


def test_the_fact_page_costs_the_same_few_queries_for_a_long_history(api, world):
    # given a fact with two revisions and one link, and one with twelve and eight
    short = fact_history_plant(api, world, changes=1, links=1, participant="p-short")
    long = fact_history_plant(api, world, changes=12, links=8, participant="p-long")
    assert Revision.objects.filter(fact_id=long.fact_id).count() == 15
    assert Link.objects.filter(target_id=long.fact_id).count() == 8
    client = signed_in(staff_create(world, "facts", "superuser"))
    client.get(page_url(short.fact_id))  # the session and the content types, cached
    # when staff open each: the long one costs what the short one costs, within the bound
    few = fact_page_queries(client, short.fact_id)
    many = fact_page_queries(client, long.fact_id)
    assert many == few
    assert few <= FACT_PAGE_QUERIES


def test_anything_not_the_staff_members_is_a_404_never_a_500(api, world, other_world):
    # given a fact of tenant A, and a fact of tenant B with its revision, subject and link
    ours = fact_history_plant(api, world, changes=1)
    theirs = fact_history_plant(api, other_world, changes=1, participant="p-theirs")
    client = signed_in(staff_create(world, "wall", "superuser"))
    their_revision = Revision.objects.filter(fact_id=theirs.fact_id).first()
    their_subject = Subject.objects.filter(fact_id=theirs.fact_id).first()
    their_link = Link.objects.filter(target_id=theirs.fact_id).first()
    # when A's staff ask for B's, for an unknown id, for garbage: a 404 each
    for url in (
        page_url(theirs.fact_id),
        page_url(uuid.uuid4()),
        "/console/facts/fact/not-a-uuid/change/",
        "/console/facts/fact/%00%27/change/",
        reverse("admin:facts_revision_change", args=[their_revision.pk]),
        reverse("admin:facts_revision_change", args=[uuid.uuid4()]),
        reverse("admin:facts_subject_change", args=[their_subject.pk]),
        reverse("admin:facts_subject_change", args=["12x"]),
        reverse("admin:facts_link_change", args=[their_link.pk]),
    ):
        assert client.get(url).status_code == 404, url
    # and their own fact's parts lead to its page
    revision = Revision.objects.get(fact_id=ours.fact_id, version=2)
    answer = client.get(reverse("admin:facts_revision_change", args=[revision.pk]))
    assert answer.status_code == 302
    assert answer["Location"] == f"{page_url(ours.fact_id)}#revision-2"
    link = Link.objects.filter(target_id=ours.fact_id).first()
    answer = client.get(reverse("admin:facts_link_change", args=[link.pk]))
    assert answer["Location"] == f"{page_url(link.source_id)}#fact-links"


def test_a_long_history_shows_its_newest_revisions_each_still_compared(api, world, monkeypatch):
    # given a fact of five revisions, and a page that shows three
    monkeypatch.setattr("facts.fact_page.REVISIONS_SHOWN", 3)
    history = fact_history_plant(api, world, changes=2, links=0)
    html = signed_in(staff_create(world, "facts", "superuser")).get(page_url(history.fact_id))
    html = html.content.decode()
    # then the newest three are there, the page says how many there are in all, and the
    # oldest shown is compared with the one before it, which is not shown
    versions = re.findall(r'class="fact-revision[^"]*" id="revision-(\d+)"', html)
    assert versions == ["5", "4", "3"]
    assert "The newest 3 of 5 revisions." in html
    assert "<del>green tea</del><ins>black coffee</ins>" in revision_item(html, 3)
    assert "the first version" not in html
