"""A benchmark's timings summarised: the percentiles every script reports."""

from __future__ import annotations

import statistics


def percentiles_ms(samples: list[float]) -> dict[int, float]:
    """p50, p95 and p99 of `samples` (seconds), in ms: the inclusive method, so that the ends of
    a short run are its own slowest and fastest samples, never extrapolated past them."""
    q = statistics.quantiles(sorted(s * 1000 for s in samples), n=100, method="inclusive")
    return {50: q[49], 95: q[94], 99: q[98]}
