"""`kindmem <command>`: Django's manage.py, installed as a console script."""

from __future__ import annotations

import os
import sys


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
    return 0


if __name__ == "__main__":  # `python -m config.cli run`, where the console script is not on PATH
    sys.exit(main())
