"""The documentation holds for a newcomer: README is short and sends them only into docs/, the
site builds from docs/ with every link resolved, and nothing points outside the repository or
speaks the project's internal words. (That every example runs: tests/kindmem/test_readme.py,
tests/clients/test_readme_agents.py and test_python_client.py, the TypeScript client's own.)"""

from __future__ import annotations

import re
import subprocess
import sys

from tests import documentation

ROOT = documentation.ROOT
# [text](target) and <scheme://...>, outside code
LINK = re.compile(r"\]\(([^)\s]+)\)")
AUTOLINK = re.compile(r"<([a-z][a-z0-9+.-]*://[^>]+)>")
# the words of the project's own history and planning, which a reader cannot look up
INTERNAL = re.compile(r"\bseed\b|\bseeds/|Kind-B|\bsession \d|\bissue \d|\.\./shared/", re.I)


def prose(text: str) -> str:
    """The page without its fenced and inline code (a path or a URL quoted as code is no link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def test_readme_is_read_in_ten_minutes_and_links_only_into_docs():
    text = documentation.README.read_text()
    assert len(text.splitlines()) < 400
    targets = LINK.findall(prose(text))
    assert targets, "README sends the reader nowhere"
    for target in targets:
        path = target.split("#", 1)[0]
        assert path.startswith("docs/"), target
        assert (ROOT / path).is_file(), target


def test_no_page_links_outside_the_repository_or_speaks_internal_words():
    for page in documentation.pages():
        text = page.read_text()
        outside = [
            t for t in LINK.findall(prose(text)) if re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)
        ] + AUTOLINK.findall(prose(text))
        assert outside == [], page.name
        assert INTERNAL.findall(text) == [], page.name


def test_the_site_builds_from_docs_with_every_link_resolved(tmp_path):
    # when MkDocs builds the site as strictly as it can (a warning fails the build: a link to a
    # page or file that is not there, a page the nav leaves out)
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # then it built, and every page of docs/ is a page of the site
    # (MkDocs is the `docs` extra, which `test` includes: `make test` installs it)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for page in documentation.pages()[1:]:
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), page.name
