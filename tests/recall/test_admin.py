"""The staff console shows conversations and their messages, read-only."""

from __future__ import annotations

from django.urls import reverse

from recall.models import Conversation, Message
from tests.recall.conftest import conversation_create


def test_staff_find_a_participants_conversations_and_read_their_messages(admin_client, world):
    # given two end users' conversations
    mine = conversation_create(world, "c1", ("user", "parcel lost"), participant_id="cust-1")
    conversation_create(world, "c2", ("user", "shoe size question"), participant_id="cust-2")
    # when staff search the conversations by participant
    listing = admin_client.get(reverse("admin:recall_conversation_changelist"), {"q": "cust-1"})
    # then only that participant's conversation is listed
    assert listing.status_code == 200
    assert b"c1" in listing.content
    assert b"cust-2" not in listing.content
    # and its page shows its messages inline
    page = admin_client.get(reverse("admin:recall_conversation_change", args=[mine.id]))
    assert page.status_code == 200
    assert b"parcel lost" in page.content
    # and the messages list filters to one conversation
    messages = admin_client.get(
        reverse("admin:recall_message_changelist"), {"conversation__id__exact": str(mine.id)}
    )
    assert messages.status_code == 200
    assert b"parcel lost" in messages.content
    assert b"shoe size question" not in messages.content


def test_the_console_cannot_add_change_or_delete_conversations(admin_client, world):
    conversation = conversation_create(world, "c1", ("user", "hi"), participant_id="cust-1")
    add = admin_client.get(reverse("admin:recall_conversation_add"))
    delete = admin_client.post(
        reverse("admin:recall_conversation_delete", args=[conversation.id]), {"post": "yes"}
    )
    change = admin_client.post(
        reverse("admin:recall_message_change", args=[Message.objects.get().id]), {"text": "edited"}
    )
    assert add.status_code == 403
    assert delete.status_code == 403
    assert change.status_code == 403
    assert Conversation.objects.count() == 1
    assert Message.objects.get().text == "hi"
