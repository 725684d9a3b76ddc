from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from config.durability import database_problems


class Command(BaseCommand):
    help = "Exit non-zero on a database without fsync, full_page_writes or pgvector 0.8."

    def handle(self, *args: Any, **options: Any) -> None:
        problems = database_problems()
        if problems:
            raise CommandError("kindmem refuses to start: " + "; ".join(problems))
        self.stdout.write("database ok: fsync on, full_page_writes on, pgvector >= 0.8")
