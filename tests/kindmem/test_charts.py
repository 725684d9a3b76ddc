"""The console's chart helper: stacked bars as inline SVG, with words and a table beside."""

from __future__ import annotations

import re
from datetime import date

import pytest

from console.charts import Chart, Series, day_labels


def _columns() -> Chart:
    return Chart(
        id="chart-t",
        title="Revisions per day",
        labels=day_labels([date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]),
        series=[Series("asserted", [2, 0, 8], "blue"), Series("rejected", [1, 0, 2], "vermillion")],
        unit="revisions",
        category="day",
    )


def test_a_chart_is_an_svg_image_named_and_described_in_words():
    html = str(_columns().render())
    assert html.startswith('<figure class="km-chart" id="chart-t"><svg ')
    assert 'role="img" aria-labelledby="chart-t-title chart-t-desc"' in html
    assert '<title id="chart-t-title">Revisions per day</title>' in html
    # the description says the totals and the largest day, which a look would show
    assert (
        '<desc id="chart-t-desc">13 revisions in all; asserted 10, rejected 3; '
        "the most: 3 Mar (10).</desc>"
    ) in html


def test_a_chart_carries_its_numbers_as_a_hidden_table():
    html = str(_columns().render())
    table = re.search(r'<div class="km-visually-hidden"><table>.*</table></div>', html).group(0)
    assert "<caption>Revisions per day</caption>" in table
    assert '<th scope="col">day</th><th scope="col">asserted</th>' in table
    assert '<tr><th scope="row">3 Mar</th><td>8</td><td>2</td><td>10</td></tr>' in table
    assert '<tr><th scope="row">2 Mar</th><td>0</td><td>0</td><td>0</td></tr>' in table


def test_segments_stack_in_proportion_and_each_has_a_tooltip():
    html = str(_columns().render())
    rects = re.findall(r'<rect x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', html)
    heights = [float(h) for _, h in rects]
    # four segments (the empty day has none): 2, 1 on the first day, 8, 2 on the third
    assert len(heights) == 4
    assert heights[2] == pytest.approx(4 * heights[0])
    assert heights[0] == pytest.approx(2 * heights[1])
    assert "<title>3 Mar: 8 asserted</title>" in html
    # a day's label a week, counted back from the last day
    assert ">3 Mar</text>" in html
    assert ">1 Mar</text>" not in html


def test_names_are_escaped_everywhere_they_appear():
    chart = Chart(
        id="chart-x",
        title="Decisions <per> reviewer",
        labels=['<img src=x onerror="alert(1)">'],
        series=[Series("approved", [3])],
        unit="decisions",
        horizontal=True,
    )
    html = str(chart.render())
    assert "<img" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "Decisions &lt;per&gt; reviewer" in html


def test_a_long_name_is_cut_on_the_axis_and_whole_in_its_tooltip():
    name = "a-very-long-reviewer-name@example.org"
    chart = Chart(
        id="c", title="t", labels=[name], series=[Series("n", [1])], unit="x", horizontal=True
    )
    html = str(chart.render())
    assert f"<title>{name}</title>a-very-long-revie…</text>" in html


def test_an_empty_chart_says_so_and_draws_no_bar():
    chart = Chart(
        id="c",
        title="t",
        labels=["a", "b"],
        series=[Series("n", [0, 0])],
        unit="x",
        empty="No memory is waiting.",
    )
    html = str(chart.render())
    assert '<desc id="c-desc">No memory is waiting.</desc>' in html
    assert "<rect" not in html


def test_a_series_must_have_a_value_per_category():
    with pytest.raises(ValueError, match="2 values for 3"):
        Chart(id="c", title="t", labels=["a", "b", "c"], series=[Series("n", [1, 2])], unit="x")


def test_a_chart_renders_itself_in_a_template():
    from django.template import Context, Template

    out = Template("{{ chart }}").render(Context({"chart": _columns()}))
    assert out == str(_columns().render())
