"""`manage.py reembed [--tenant ID] [--batch N]`: give every current revision a vector of the
configured model (those with none, or another model's), in batches, with a progress bar.

Resumable by construction: it works through what still lacks the configured model's vector,
so an interrupted run is finished by running it again. Changing the model is this command,
never a silent mix of two models' spaces (search only reads vectors of the configured model).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from api.errors import EmbeddingUnavailable
from embeddings.providers import EmbeddingFailed, get_embedder
from facts.embedding import revisions_embed
from facts.models import Revision

BAR_WIDTH = 30


class Command(BaseCommand):
    help = "Embed every current revision that lacks a vector of the configured model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant's revisions (its id)")
        parser.add_argument("--batch", type=int, default=256, help="revisions per batch")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            embedder = get_embedder()
        except EmbeddingUnavailable as exc:
            raise CommandError(exc.message) from exc
        if embedder is None:
            raise CommandError("No embedder is configured (KINDMEM_EMBEDDER=none).")
        batch = options["batch"]
        if batch < 1:
            raise CommandError("--batch must be at least 1.")
        todo = Revision.objects.unembedded(embedder.model)
        if options["tenant"]:
            try:
                todo = todo.of_tenant(uuid.UUID(options["tenant"]))
            except ValueError:
                raise CommandError("--tenant must be a tenant id (a UUID).") from None
        total = todo.count()
        self.stdout.write(f"{total} revision(s) to embed with {embedder.model}")
        done = embedded = 0
        last: uuid.UUID | None = None
        started = time.monotonic()
        while True:
            page = todo.order_by("pk")
            if last is not None:
                page = page.filter(pk__gt=last)  # keyset: a row that fails is not retried here
            ids = list(page.values_list("pk", flat=True)[:batch])
            if not ids:
                break
            try:
                embedded += revisions_embed(revision_ids=ids, embedder=embedder)
            except EmbeddingFailed as exc:
                self._bar(done, total, started, end=True)
                raise CommandError(
                    f"The embedder failed after {embedded} revision(s): {exc}. "
                    "Run the command again to resume."
                ) from exc
            done += len(ids)
            last = ids[-1]
            self._bar(done, total, started)
        self._bar(done, total, started, end=True)
        self.stdout.write(self.style.SUCCESS(f"embedded {embedded} revision(s)"))

    def _bar(self, done: int, total: int, started: float, *, end: bool = False) -> None:
        share = done / total if total else 1.0
        filled = int(BAR_WIDTH * share)
        rate = done / max(time.monotonic() - started, 1e-9)
        line = f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} {rate:.0f}/s"
        self.stdout.write(line, ending="\n" if end else "")
        self.stdout.flush()
