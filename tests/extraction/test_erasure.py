"""An erasure of a person leaves nothing of their extractions: the jobs (the refused answers
they keep), the decisions' texts, the watermark, the runs they wrote as."""

from __future__ import annotations

import pytest

from extraction.models import ConversationExtraction, ExtractionDecision, ExtractionJob
from extraction.services import extraction_request
from extraction.tasks import extract_conversation
from privacy.erasure import erasure_run
from privacy.models import RequestStatus
from privacy.services import erasure_start
from tests.extraction.conftest import add, completion
from tests.privacy.conftest import residue_scan
from tests.recall.conftest import conversation_create

pytestmark = pytest.mark.django_db


def test_erasing_a_person_erases_their_extractions(llm, declared):
    # given a conversation of the person, one applied extraction and one refused answer
    person, marker = "participant-zqx-41", "zqxmarker"
    conversation_create(
        declared, "conv-zqx", ("user", f"I like {marker} tea."), participant_id=person
    )
    llm.answer(lambda shown: [add("preference", f"Likes {marker} tea.", [1])])
    applied = extraction_request(principal=declared.app.principal, conversation_id="conv-zqx").job
    extract_conversation(str(applied.id), tenant_id=str(declared.tenant.id))
    conversation_create(declared, "conv-zqx", ("user", "More."), participant_id=person)
    llm.default = lambda payload: completion(f"not json, but {marker}")
    refused = extraction_request(principal=declared.app.principal, conversation_id="conv-zqx").job
    extract_conversation(str(refused.id), tenant_id=str(declared.tenant.id))
    assert residue_scan([marker]) != []
    # when the person is erased
    request = erasure_start(
        tenant_id=declared.tenant.id,
        target_kind="participant",
        target_id=person,
        reason="the person asked",
        requested_by="admin:test",
    )
    done = erasure_run(erasure_id=request.id)
    # then nothing of theirs is left anywhere
    assert done.status == RequestStatus.COMPLETED
    assert residue_scan([person, marker]) == []
    assert not ExtractionJob.objects.exists()
    assert not ExtractionDecision.objects.exists()
    assert not ConversationExtraction.objects.exists()
