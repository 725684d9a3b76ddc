"""The documentation a reader copies from: README.md, then the pages of docs/ in the site's order
(mkdocs.yml's nav), then any page the nav leaves out. The tests that execute its examples read
them here, so an example that moves from one page to another is still run, and the shell
examples keep the order a reader meets them in (a later one uses what an earlier one set)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _nav_files(nav: Any) -> Iterator[str]:
    """The page files of an MkDocs nav: a list of pages, `title: file` or `title: [nested]`."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for entry in nav:
            yield from _nav_files(entry)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_files(value)


def pages() -> list[Path]:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = [DOCS / name for name in _nav_files(nav) if not re.match(r"\w+://", name)]
    unlisted = sorted(set(DOCS.glob("*.md")) - set(listed))
    return [README, *listed, *unlisted]


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def blocks(language: str) -> list[str]:
    """Every ```<language> block of every page, in reading order."""
    return [block for page in pages() for block in fenced(page.read_text(), language)]


def block(heading: str, language: str) -> str:
    """The first ```<language> block after the heading `heading` (at any level), on the one page
    that has that heading."""
    pattern = re.compile(rf"^#+ {re.escape(heading)}\n", re.MULTILINE)
    found = [
        text[match.end() :]
        for text in (page.read_text() for page in pages())
        if (match := pattern.search(text))
    ]
    assert len(found) == 1, f"{len(found)} pages have the heading {heading!r}"
    [after] = found
    [first, *_] = fenced(after, language) or [""]
    assert first, f"no ```{language} block after {heading!r}"
    return first
