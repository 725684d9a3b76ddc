"""The issue-45 retrieval settings refuse a bad value at start, naming the variable, rather
than searching with a floor, an arm or a budget nobody meant: each case imports the settings in
a fresh interpreter with the variable set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRINT = "import config.settings as s; import json; print(json.dumps([s.RELEVANCE_THRESHOLDS, s.RETRIEVAL_ARMS]))"  # noqa: E501


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRINT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KINDMEM_RELEVANCE_THRESHOLDS", "not json"),
        ("KINDMEM_RELEVANCE_THRESHOLDS", '{"recall.fuzzy": 0.3}'),
        ("KINDMEM_RELEVANCE_THRESHOLDS", '{"recall.semantic": "high"}'),
        ("KINDMEM_RELEVANCE_THRESHOLDS", "[0.3]"),
        ("KINDMEM_RETRIEVAL_ARMS", "temporal,psychic"),
        ("KINDMEM_RERANKER_BUDGET_MS", "0"),
    ],
)
def test_a_bad_value_stops_the_start_naming_the_variable(name, value):
    result = settings_with(**{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


def test_an_override_replaces_only_the_floors_it_names_and_arms_switch_off():
    result = settings_with(
        KINDMEM_RELEVANCE_THRESHOLDS='{"recall.semantic": 0.4}', KINDMEM_RETRIEVAL_ARMS=""
    )
    assert result.returncode == 0, result.stderr
    thresholds, arms = json.loads(result.stdout.strip().splitlines()[-1])
    assert thresholds["recall.semantic"] == 0.4
    assert thresholds["facts.semantic"] == pytest.approx(0.1158)
    assert arms == []
