"""What /healthz and the capability probe say of extraction: whether a chat model answers,
and, per credential, whether the extract route is its to call."""

from __future__ import annotations

import pytest

from config.tasks import probe_dependencies
from extraction.provider import _configured
from tests import factories
from tests.extraction.conftest import Reply

pytestmark = pytest.mark.django_db


def test_without_a_model_the_probe_and_health_say_extraction_is_unavailable(api, world, settings):
    settings.LLM_URL = settings.LLM_MODEL = ""
    _configured.cache_clear()
    body = api.get("/v1/capabilities", **world.app.headers).json()
    assert body["extraction"]["available"] is False
    assert body["extraction"]["model"] is None
    assert "KINDMEM_LLM_URL" in body["extraction"]["error"]
    health = api.get("/healthz").json()
    assert health["checks"]["extraction"]["available"] is False
    assert health["status"] != "down"


def test_with_a_model_that_answers_the_probe_names_it(api, world, llm):
    body = api.get("/v1/capabilities", **world.app.headers).json()
    assert body["extraction"] == {"available": True, "model": "fake-llm-1", "error": None}
    # /healthz says what the worker's last probe found (config/tasks.py)
    probe_dependencies()
    health = api.get("/healthz").json()["checks"]["extraction"]
    assert (health["ok"], health["available"], health["model"]) == (True, True, "fake-llm-1")


def test_an_anonymous_healthz_never_calls_the_model_nor_shows_its_address(api, world, llm):
    # given: a worker that probed the model once
    probe_dependencies()
    probes = len(llm.requests)
    assert probes == 1
    # when: /healthz is asked six times, with no credential
    answers = [api.get("/healthz") for _ in range(6)]
    # then: the model was not called again, and no answer names where it is
    assert len(llm.requests) == probes
    for answer in answers:
        assert answer.status_code == 200
        assert answer.json()["checks"]["extraction"]["available"] is True
        assert llm.url not in answer.content.decode()
        assert "127.0.0.1" not in answer.content.decode()


def test_a_model_the_worker_could_not_reach_is_reported_without_its_address(api, world, llm):
    # given: a model whose server is gone, probed by the worker
    llm.script = [Reply(status=503, body={"error": {"message": f"down at {llm.url}/v1"}})]
    probe_dependencies()
    # when / then: /healthz says it is unavailable, and where it is stays unsaid
    health = api.get("/healthz")
    extraction = health.json()["checks"]["extraction"]
    assert (health.status_code, extraction["ok"], extraction["available"]) == (200, False, False)
    assert llm.url not in health.content.decode()


def test_a_model_that_does_not_answer_is_reported_not_fatal(api, world, llm):
    llm.script = [Reply(status=503, body={"error": {"message": "loading"}})] * 2
    body = api.get("/v1/capabilities", **world.app.headers).json()
    assert body["extraction"]["available"] is False
    assert "503" in body["extraction"]["error"]
    assert api.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("who", "may"), [("admin", False), ("app", True), ("user_key", False), ("run", True)]
)
def test_the_extract_operation_is_the_routes_own_permission(api, world, llm, who, may):
    headers = (
        factories.run_create(world.app, world.project).headers
        if who == "run"
        else getattr(world, who).headers
    )
    operations = api.get("/v1/capabilities", **headers).json()["operations"]
    assert operations["extract"] is may
    refused = api.post("/v1/conversations/none/extract", {}, format="json", **headers)
    assert (refused.status_code != 403) is may
