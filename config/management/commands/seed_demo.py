from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from config.demo import demo_seed


class Command(BaseCommand):
    help = "Create or refresh the demo tenant and print its credentials."

    def handle(self, *args: Any, **options: Any) -> None:
        creds = demo_seed()
        self.stdout.write(format_credentials(creds, base_url=""))


def format_credentials(creds: Any, *, base_url: str) -> str:
    lines = [
        "",
        "kindmem is running." if base_url else "Demo tenant ready.",
        *(
            [f"  console:  {base_url}/console/", f"  API docs: {base_url}/v1/docs"]
            if base_url
            else []
        ),
        f"  tenant:   {creds.tenant.name} ({creds.tenant.id})",
        f"  project:  {creds.project.name} ({creds.project.id})",
        "  console logins (username / password):",
        *(f"    {name:9} {password}" for name, password in creds.passwords.items()),
        "  API keys (shown once):",
        *(f"    {name:9} {key}" for name, key in creds.keys.items()),
        "  demo people (participant ids, for subject access and erasure):",
        *(f"    {person}  {what}" for person, what in creds.people.items()),
        "",
    ]
    return "\n".join(lines)
