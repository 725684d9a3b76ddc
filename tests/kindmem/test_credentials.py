from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.db.models import RestrictedError
from django.utils import timezone

from kindmem import services
from kindmem.models import ApiKey, Run
from tests import factories


def test_api_key_is_stored_hashed_and_recognisably_prefixed(world):
    # given a freshly created key
    key, token = world.app.key, world.app.token
    # then only its hash is stored, and the plaintext carries the kindmem marker
    stored = ApiKey.objects.get(pk=key.pk)
    assert token.startswith("kmk_")
    assert token[4:16] == stored.prefix
    assert stored.key_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {getattr(stored, f.attname) for f in ApiKey._meta.concrete_fields}


def test_valid_key_authenticates_and_records_last_use(api, world):
    response = api.get("/v1/me", **world.admin.headers)
    assert response.status_code == 200
    assert response.json()["kind"] == "admin"
    assert ApiKey.objects.get(pk=world.admin.key.pk).last_used_at is not None


def test_revoked_key_is_refused_with_unauthenticated(api, world):
    # given a revoked key
    assert services.api_key_revoke(key=world.app.key) is True
    # when it is used
    response = api.get("/v1/me", **world.app.headers)
    # then it is refused in the one error shape
    assert response.status_code == 401
    assert response.json() == {
        "code": "unauthenticated",
        "message": "This key was revoked.",
        "details": None,
    }
    # and revoking twice reports that nothing changed
    assert services.api_key_revoke(key=world.app.key) is False


def test_revoked_key_cannot_mint_runs_and_nothing_is_written(api, world):
    services.api_key_revoke(key=world.app.key)
    response = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(world.project.id)},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 401
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    "header",
    [
        "Bearer kmk_doesnotexistdoesnotexistdoesnotexistdoesnotexist1234",
        "Bearer not-a-key",
        "Basic dXNlcjpwYXNz",
        "Bearer ",
    ],
)
def test_unknown_or_malformed_credentials_are_refused(api, world, header):
    response = api.get("/v1/me", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


def test_a_key_with_the_right_prefix_but_wrong_secret_is_refused(api, world):
    token = world.admin.token
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    response = api.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {forged}")
    assert response.status_code == 401


def test_app_key_mints_a_run_whose_token_acts_with_the_runs_readers(api, world):
    # when an app mints a run for one of its end users
    response = api.post(
        "/v1/runs",
        {
            "agent_id": "support-bot",
            "project_id": str(world.project.id),
            "participant_id": "cust-42",
            "thread_id": "conv-7",
        },
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 201
    body = response.json()
    assert body["token"].startswith("kmr_")
    assert body["run"]["agent_version"] == "1.0.0"
    # then calls with the run token act for that run only
    me = api.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {body['token']}").json()
    assert me["kind"] == "run"
    assert me["run_id"] == body["run"]["id"]
    assert me["readers"] == {
        "all": False,
        "project_ids": [str(world.project.id)],
        "org_ids": [str(world.org.id)],
        "user_ids": [],
        "participant_ids": ["cust-42"],
        "thread_ids": ["conv-7"],
        "on_behalf_of_project_ids": [],
    }


def test_expired_run_token_is_refused(api, world):
    minted = factories.run_create(world.app, world.project)
    Run.objects.filter(pk=minted.run.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = api.get("/v1/me", **minted.headers)
    assert response.status_code == 401
    assert response.json()["message"] == "This run token has expired."


def test_run_token_stops_working_when_its_minting_key_is_revoked(api, world):
    minted = factories.run_create(world.app, world.project)
    assert api.get("/v1/me", **minted.headers).status_code == 200
    services.api_key_revoke(key=world.app.key)
    assert api.get("/v1/me", **minted.headers).status_code == 401


def test_a_run_token_cannot_mint_another_run(api, world):
    minted = factories.run_create(world.app, world.project)
    response = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(world.project.id)},
        format="json",
        **minted.headers,
    )
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


def test_another_tenants_key_cannot_mint_in_this_tenants_project(api, world, other_world):
    response = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(world.project.id)},
        format="json",
        **other_world.app.headers,
    )
    assert response.status_code == 404
    assert response.json()["code"] == "not-found"
    assert Run.objects.count() == 0


def test_an_app_key_cannot_mint_in_a_project_it_does_not_act_for(api, world):
    elsewhere = factories.project_create(world.tenant)
    response = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(elsewhere.id)},
        format="json",
        **world.app.headers,
    )
    assert response.status_code == 403
    assert Run.objects.count() == 0


def test_a_user_key_mints_runs_for_itself_in_its_projects_only(api, world):
    ok = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(world.project.id)},
        format="json",
        **world.user_key.headers,
    )
    assert ok.status_code == 201
    assert ok.json()["run"]["user_id"] == str(world.user.id)
    someone_else = factories.user_create(world.tenant, projects=[world.project])
    refused = api.post(
        "/v1/runs",
        {
            "agent_id": "support-bot",
            "project_id": str(world.project.id),
            "user_id": str(someone_else.id),
        },
        format="json",
        **world.user_key.headers,
    )
    assert refused.status_code == 403
    assert Run.objects.count() == 1


def test_admin_key_does_not_mint_runs(api, world):
    response = api.post(
        "/v1/runs",
        {"agent_id": "support-bot", "project_id": str(world.project.id)},
        format="json",
        **world.admin.headers,
    )
    assert response.status_code == 403


def _deactivate(user):
    user.is_active = False
    user.save(update_fields=["is_active"])


def test_hole_5_deactivated_users_key_is_401(api, world):
    # given a Kindgi user's key that works
    assert api.get("/v1/me", **world.user_key.headers).status_code == 200
    # when the user is deactivated
    _deactivate(world.user)
    # then their key is refused as unauthenticated
    response = api.get("/v1/me", **world.user_key.headers)
    assert response.status_code == 401
    assert response.json() == {
        "code": "unauthenticated",
        "message": "This key's user was deactivated.",
        "details": None,
    }


def test_hole_5_an_admin_key_naming_a_deactivated_user_is_401(api, world):
    # given a tenant admin key created for a person
    _, token = services.api_key_create(
        tenant=world.tenant, kind="admin", name="ops", user=world.user
    )
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert api.get("/v1/me", **headers).status_code == 200
    # when that person is deactivated, the key goes with them
    _deactivate(world.user)
    assert api.get("/v1/me", **headers).status_code == 401


def test_hole_5_runs_minted_by_a_deactivated_users_key_are_401(api, world):
    # given a run the user minted with their own key
    minted = factories.run_create(world.user_key, world.project, participant_id=None)
    assert minted.run.user_id == world.user.id
    assert minted.run.minted_by_id == world.user_key.key.id
    assert api.get("/v1/me", **minted.headers).status_code == 200
    # when the user is deactivated
    _deactivate(world.user)
    # then the run's token is refused too
    response = api.get("/v1/me", **minted.headers)
    assert response.status_code == 401
    assert response.json()["message"] == "This run's user was deactivated."


def test_hole_5_an_app_run_acting_for_a_deactivated_user_is_401(api, world):
    # given an app's run acting for a member Kindgi user (minted before apps were refused
    # that), and one for an end user only
    for_user = factories.run_create(world.app, world.project, thread_id="t-user")
    Run.objects.filter(pk=for_user.run.pk).update(user=world.user, participant_id=None)
    for_participant = factories.run_create(world.app, world.project)
    # when that user is deactivated
    _deactivate(world.user)
    # then the run that acts with their readers stops; the app's other runs go on
    assert api.get("/v1/me", **for_user.headers).status_code == 401
    assert api.get("/v1/me", **for_participant.headers).status_code == 200


def test_hole_6_a_run_whose_minting_key_is_gone_is_401(api, world):
    # given a run whose minting key was deleted before keys were kept (SET_NULL left no key)
    minted = factories.run_create(world.app, world.project)
    Run.objects.filter(pk=minted.run.pk).update(minted_by=None)
    # when its token is used, then it is refused: every run is minted by a key that still stands
    response = api.get("/v1/me", **minted.headers)
    assert response.status_code == 401
    assert response.json()["message"] == "The key that minted this run is gone."


def test_hole_6_a_key_that_minted_runs_cannot_be_deleted(api, world):
    # given a revoked key that minted a run
    minted = factories.run_create(world.app, world.project)
    services.api_key_revoke(key=world.app.key)
    # when the key is deleted through the ORM, then it is refused, and the run and key stay
    with pytest.raises(RestrictedError):
        ApiKey.objects.filter(pk=world.app.key.pk).delete()
    assert ApiKey.objects.filter(pk=world.app.key.pk, revoked_at__isnull=False).exists()
    assert Run.objects.filter(pk=minted.run.pk, minted_by=world.app.key).exists()
    # and the run's token stays refused: revocation is permanent
    assert api.get("/v1/me", **minted.headers).status_code == 401


def test_hole_6_the_console_revokes_keys_and_never_deletes_them(
    api, client, django_user_model, world
):
    # given a superuser in the console, and a key that minted a run
    client.force_login(django_user_model.objects.create_superuser("root", password="pw"))
    minted = factories.run_create(world.app, world.project)
    key = world.app.key
    # when staff try to delete the key, one or in bulk
    single = client.post(f"/console/kindmem/apikey/{key.pk}/delete/", {"post": "yes"})
    bulk = client.post(
        "/console/kindmem/apikey/",
        {"action": "delete_selected", "_selected_action": [str(key.pk)], "post": "yes"},
    )
    # then nothing is deleted: the delete page is forbidden and the bulk action is not offered
    assert single.status_code == 403
    actions = client.get("/console/kindmem/apikey/").context["action_form"].fields["action"]
    assert "delete_selected" not in dict(actions.choices)
    assert bulk.status_code in {200, 302}
    assert ApiKey.objects.filter(pk=key.pk).exists()
    assert api.get("/v1/me", **minted.headers).status_code == 200
    # and Revoke is what ends the key and its runs
    client.post("/console/kindmem/apikey/", {"action": "revoke", "_selected_action": [str(key.pk)]})
    assert ApiKey.objects.get(pk=key.pk).is_revoked
    assert api.get("/v1/me", **minted.headers).status_code == 401
