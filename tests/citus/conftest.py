"""The fixtures the routing tests share with the apps' own tests."""

from tests.approvals.conftest import agent_run, reviewer  # noqa: F401
from tests.recall.conftest import hashing_embedder, history  # noqa: F401
