"""The API's own routes: who am I, and minting runs."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import ErrorOutput
from kindmem import services
from kindmem.access import readers_for
from kindmem.permissions import CanMintRuns, principal_of
from kindmem.serializers import RunMintInput, RunMintOutput, WhoAmIOutput

ERRORS = {400: ErrorOutput, 401: ErrorOutput, 403: ErrorOutput, 404: ErrorOutput}


class WhoAmIView(APIView):
    """The caller's principal and the readers its credential grants."""

    @extend_schema(responses={200: WhoAmIOutput, **ERRORS})
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        readers = readers_for(principal)
        body = {
            "kind": principal.kind,
            "tenant_id": principal.tenant_id,
            "principal": principal.id,
            "run_id": principal.run.id if principal.run else None,
            "readers": {
                "all": readers.all,
                **{
                    name: sorted(getattr(readers, name))
                    for name in (
                        "project_ids",
                        "org_ids",
                        "user_ids",
                        "participant_ids",
                        "thread_ids",
                        "on_behalf_of_project_ids",
                    )
                },
            },
        }
        return Response(WhoAmIOutput(body).data)


class RunListView(APIView):
    """Mint a run (an app or a Kindgi user) and receive its short-lived token."""

    permission_classes = [CanMintRuns]

    @extend_schema(request=RunMintInput, responses={201: RunMintOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        data = RunMintInput(data=request.data)
        data.is_valid(raise_exception=True)
        run, token = services.run_mint(principal=principal_of(request), **data.validated_data)
        return Response(
            RunMintOutput({"run": run, "token": token}).data, status=status.HTTP_201_CREATED
        )
