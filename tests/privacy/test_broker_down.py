"""A privacy request accepted while the broker is down: its row has committed, so it answers
as usual (never 500, which a client would retry into a second request), the failed publish is
logged, and the beat sweep starts it later (api/background.py).

The database is transactional here: the request's transaction commits for real, so its
on-commit publish runs inside the request, against a broker where nothing listens."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse

from kindmem.models import ErasureHold
from privacy.models import AccessRequest, ErasureRequest, RequestStatus
from privacy.tasks import resume_access_exports, resume_erasures
from tests.conftest import DEAD_BROKER_WITHIN_SECONDS, publish_warned
from tests.console.conftest import staff_create
from tests.privacy.conftest import plant_person

pytestmark = pytest.mark.django_db(transaction=True)


def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


PERSON = "participant-nobroker"


@pytest.fixture
def person(world: Any) -> str:
    plant_person(world, PERSON, "zqnobroker", facts=1, messages=1, entries=1)
    return PERSON


def _erasure_resumed_by_the_sweep(erasure: ErasureRequest) -> None:
    assert erasure.status == RequestStatus.PENDING
    assert ErasureHold.objects.filter(erasure_id=erasure.pk).exists()
    # when beat runs the sweep (its message runs here, in this process)
    assert resume_erasures() == 1
    # then the erasure ran to its end
    erasure.refresh_from_db()
    assert erasure.status == RequestStatus.COMPLETED
    assert not ErasureHold.objects.filter(erasure_id=erasure.pk).exists()


def _export_resumed_by_the_sweep(access: AccessRequest, settings: Any) -> None:
    assert access.status == RequestStatus.PENDING
    # a request just made is left to its own message...
    assert resume_access_exports() == 0
    # ...and once it is older than ACCESS_EXPORT_STALE_SECONDS the sweep queues it again
    settings.ACCESS_EXPORT_STALE_SECONDS = 0
    assert resume_access_exports() == 1
    access.refresh_from_db()
    assert access.status == RequestStatus.COMPLETED
    assert access.export_json is not None


# Each API request that queues its task on commit: its route, body, task, row and its sweep.
API_REQUESTS = {
    "erasure": (
        "erasures",
        {"target_kind": "participant", "target_id": PERSON, "reason": "asked"},
        "privacy.tasks.erase_subject",
        ErasureRequest,
        lambda erasure, settings: _erasure_resumed_by_the_sweep(erasure),
    ),
    "access export": (
        "subject-access-requests",
        {"subject_kind": "participant", "subject_id": PERSON},
        "privacy.tasks.build_access_export",
        AccessRequest,
        _export_resumed_by_the_sweep,
    ),
}


@pytest.mark.parametrize("kind", list(API_REQUESTS))
def test_a_request_asked_while_the_broker_is_down_is_accepted_and_its_sweep_runs_it(
    kind, api, world, person, dead_broker, eager_tasks, caplog, settings
):
    route, body, task_name, model, resumed_by_the_sweep = API_REQUESTS[kind]
    api.raise_request_exception = False  # a 500 is an answer the test looks at
    # when an admin asks for it while the broker cannot be reached
    response, elapsed = _timed(
        lambda: api.post(reverse(route), body, format="json", **world.admin.headers)
    )
    # then it is accepted as usual, soon, with the failed publish logged
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "pending"
    assert elapsed < DEAD_BROKER_WITHIN_SECONDS
    row = model.objects.get(pk=response.json()["id"])
    assert publish_warned(caplog, task_name, row.pk)
    # and its sweep runs it
    eager_tasks()
    resumed_by_the_sweep(row, settings)


def test_the_consoles_start_forms_accept_while_the_broker_is_down_and_the_sweeps_finish(
    client, world, person, dead_broker, eager_tasks, caplog, settings
):
    client.raise_request_exception = False
    client.force_login(staff_create(world, "nobroker", "officer"))
    # when a privacy officer confirms an erasure and asks for an export in the console
    erasure_form = {
        "tenant": world.tenant.id,
        "target_kind": "participant",
        "target_id": person,
        "reason": "asked by email",
        "step": "confirm",
    }
    erased, erasure_elapsed = _timed(
        lambda: client.post(reverse("admin:privacy_erasurerequest_start"), erasure_form)
    )
    export_form = {"tenant": world.tenant.id, "subject_kind": "participant", "subject_id": person}
    exported, export_elapsed = _timed(
        lambda: client.post(reverse("admin:privacy_accessrequest_start"), export_form)
    )
    # then both are accepted as usual (redirected to what they started), soon, and logged
    erasure = ErasureRequest.objects.get()
    access = AccessRequest.objects.get()
    assert erased.status_code == 302
    assert erased["Location"] == reverse("admin:privacy_erasurerequest_status", args=[erasure.pk])
    assert exported.status_code == 302
    assert exported["Location"] == reverse("admin:privacy_accessrequest_changelist")
    assert erasure_elapsed < DEAD_BROKER_WITHIN_SECONDS
    assert export_elapsed < DEAD_BROKER_WITHIN_SECONDS
    assert publish_warned(caplog, "privacy.tasks.erase_subject", erasure.pk)
    assert publish_warned(caplog, "privacy.tasks.build_access_export", access.pk)
    # and the sweeps finish them
    eager_tasks()
    _export_resumed_by_the_sweep(access, settings)
    _erasure_resumed_by_the_sweep(erasure)


def test_every_sweep_that_resumes_a_request_publish_is_on_beat(settings):
    # the tasks api/background.py leaves to a sweep when the broker is down, and the sweeps
    from config.celery import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    sweeps = {
        "privacy.tasks.resume_erasures",
        "privacy.tasks.resume_access_exports",
        "facts.tasks.embed_backlog",
        "recall.tasks.embed_backlog",
    }
    assert sweeps <= scheduled
    assert sweeps <= set(app.tasks)
