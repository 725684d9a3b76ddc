"""The console's charts: small stacked bar charts drawn on the server as inline SVG.

One helper for every chart of the front page (privacy/front_page.py): no script, no chart
library, nothing fetched from elsewhere. A `Chart` is its categories (days, or names), a few
series of counts and the words that say what it shows; rendered (`{{ chart }}` in a template),
it is a figure of

- the SVG (`role="img"`), its `<title>` and a `<desc>` that says the totals and the largest
  category in words, and a `<title>` on every bar segment (a pointer's tooltip);
- a legend in HTML;
- the same numbers as a table, visually hidden, for screen readers and for copying.

Columns run left to right over time (`horizontal=False`: days); bars run across, one per
category, when the categories are names (`horizontal=True`: reviewers, age ranges). Every
label and name is escaped: usernames and reasons come from people.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

from django.utils.formats import number_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

# Okabe and Ito's colours, told apart with the common colour blindnesses, readable on the
# light and the dark theme alike.
COLOURS = {
    "blue": "#0072B2",
    "sky": "#56B4E9",
    "green": "#009E73",
    "orange": "#E69F00",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}

WIDTH = 560  # the SVG's own units; it scales to its box
COLUMNS_HEIGHT = 170
BAR_HEIGHT = 18
BAR_GAP = 6
LABEL_WIDTH = 120  # a horizontal chart's category names
LABEL_CHARS = 18
TOTAL_HEADER = SafeString('<th scope="col">total</th>')


@dataclass(frozen=True)
class Series:
    label: str
    values: list[int]
    colour: str = "blue"  # a key of COLOURS


@dataclass(frozen=True)
class Chart:
    """A stacked bar chart. `labels` name the categories, each series has one value per
    category; `unit` names what is counted ("revisions"), `of` what a category is ("day")."""

    id: str
    title: str
    labels: list[str]
    series: list[Series]
    unit: str
    category: str = ""  # what a category is, for the table's first column ("day")
    horizontal: bool = False
    empty: str = "Nothing in this period."
    totals: list[int] = field(init=False)

    def __post_init__(self) -> None:
        for series in self.series:
            if len(series.values) != len(self.labels):
                raise ValueError(
                    f"{series.label}: {len(series.values)} values for {len(self.labels)}"
                )
        totals = [sum(vs) for vs in zip(*(s.values for s in self.series), strict=True)]
        object.__setattr__(self, "totals", totals or [0] * len(self.labels))

    @property
    def total(self) -> int:
        return sum(self.totals)

    def description(self) -> str:
        """The chart in one or two sentences: what it would take a look to see."""
        if not self.total:
            return self.empty
        words = [f"{_n(self.total)} {self.unit} in all"]
        if len(self.series) > 1:
            parts = ", ".join(
                f"{s.label} {_n(sum(s.values))}" for s in self.series if any(s.values)
            )
            words.append(parts)
        most = max(range(len(self.labels)), key=lambda i: self.totals[i])
        words.append(f"the most: {self.labels[most]} ({_n(self.totals[most])})")
        return "; ".join(words) + "."

    def __str__(self) -> str:
        # A SafeString, which str() and the template engine keep as it is (`{{ chart }}`).
        return self.render()

    def __html__(self) -> str:
        return self.render()

    def render(self) -> SafeString:
        svg = self._bars() if self.horizontal else self._columns()
        legend = (
            format_html_join(
                "",
                '<li><span class="km-swatch" style="background:{}"></span>{}</li>',
                ((COLOURS[s.colour], s.label) for s in self.series),
            )
            if len(self.series) > 1
            else ""
        )
        return format_html(
            '<figure class="km-chart" id="{}">{}{}{}</figure>',
            self.id,
            svg,
            format_html('<ul class="km-legend" aria-hidden="true">{}</ul>', legend)
            if legend
            else "",
            self._table(),
        )

    # --- drawing ------------------------------------------------------------------------

    def _frame(self, height: float, body: list[SafeString]) -> SafeString:
        return format_html(
            '<svg class="km-chart-svg" viewBox="0 0 {} {}" width="100%" role="img" '
            'aria-labelledby="{}-title {}-desc" preserveAspectRatio="xMinYMin meet">'
            '<title id="{}-title">{}</title><desc id="{}-desc">{}</desc>{}</svg>',
            WIDTH,
            _f(height),
            self.id,
            self.id,
            self.id,
            self.title,
            self.id,
            self.description(),
            format_html_join("", "{}", ((part,) for part in body)),
        )

    def _columns(self) -> SafeString:
        left, right, top, bottom = 34, 6, 8, 20
        height = COLUMNS_HEIGHT
        plot_w, plot_h = WIDTH - left - right, height - top - bottom
        scale = _nice_ceiling(max(self.totals, default=0))
        parts = []
        # whole numbers on the axis: no "2.5 requests"
        for tick in (0, scale / 2, scale) if scale % 2 == 0 else (0, scale):
            y = top + plot_h - plot_h * tick / scale
            parts.append(
                format_html(
                    '<line class="km-grid" x1="{}" x2="{}" y1="{}" y2="{}"></line>'
                    '<text class="km-axis" x="{}" y="{}" text-anchor="end">{}</text>',
                    left,
                    WIDTH - right,
                    _f(y),
                    _f(y),
                    left - 4,
                    _f(y + 3.5),
                    _n(tick),
                )
            )
        columns = max(len(self.labels), 1)
        step = plot_w / columns
        width = max(step * 0.78, 1)
        for position, label in enumerate(self.labels):
            x = left + position * step + (step - width) / 2
            base: float = top + plot_h
            for series in self.series:
                value = series.values[position]
                if not value:
                    continue
                h = plot_h * value / scale
                base -= h
                parts.append(self._segment(x, base, width, h, series, label, value))
            # a label a week, counted back from the last day (today): 30 would not fit
            if (columns - 1 - position) % 7 == 0:
                parts.append(
                    format_html(
                        '<text class="km-axis" x="{}" y="{}" text-anchor="middle">{}</text>',
                        _f(left + position * step + step / 2),
                        height - 6,
                        label,
                    )
                )
        return self._frame(height, parts)

    def _bars(self) -> SafeString:
        right, top = 40, 4
        left = LABEL_WIDTH
        rows = max(len(self.labels), 1)
        height = top * 2 + rows * (BAR_HEIGHT + BAR_GAP)
        plot_w = WIDTH - left - right
        scale = max(max(self.totals, default=0), 1)
        parts = []
        for position, label in enumerate(self.labels):
            y = top + position * (BAR_HEIGHT + BAR_GAP)
            short = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
            parts.append(
                format_html(
                    '<text class="km-axis km-label" x="{}" y="{}" text-anchor="end">'
                    "<title>{}</title>{}</text>",
                    left - 6,
                    _f(y + BAR_HEIGHT * 0.7),
                    label,
                    short,
                )
            )
            x = float(left)
            for series in self.series:
                value = series.values[position]
                if not value:
                    continue
                w = plot_w * value / scale
                parts.append(self._segment(x, y, w, BAR_HEIGHT, series, label, value))
                x += w
            parts.append(
                format_html(
                    '<text class="km-axis km-value" x="{}" y="{}">{}</text>',
                    _f(x + 4),
                    _f(y + BAR_HEIGHT * 0.7),
                    _n(self.totals[position]),
                )
            )
        return self._frame(height, parts)

    def _segment(
        self, x: float, y: float, w: float, h: float, series: Series, label: str, value: int
    ) -> SafeString:
        return format_html(
            '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title></rect>',
            _f(x),
            _f(y),
            _f(w),
            _f(h),
            COLOURS[series.colour],
            label,
            _n(value),
            series.label if len(self.series) > 1 else self.unit,
        )

    def _table(self) -> SafeString:
        head = format_html_join("", '<th scope="col">{}</th>', ((s.label,) for s in self.series))
        rows = format_html_join(
            "",
            '<tr><th scope="row">{}</th>{}{}</tr>',
            (
                (
                    label,
                    format_html_join("", "<td>{}</td>", ((_n(s.values[i]),) for s in self.series)),
                    format_html("<td>{}</td>", _n(self.totals[i])) if len(self.series) > 1 else "",
                )
                for i, label in enumerate(self.labels)
            ),
        )
        return format_html(
            # a table keeps the width of its content: the box that hides it is a div
            '<div class="km-visually-hidden"><table><caption>{}</caption><thead><tr>'
            '<th scope="col">{}</th>{}{}</tr></thead><tbody>{}</tbody></table></div>',
            self.title,
            self.category,
            head,
            TOTAL_HEADER if len(self.series) > 1 else "",
            rows,
        )


def day_labels(days: list[date]) -> list[str]:
    """ "3 Nov" for each day: short enough for an axis, and read aloud as a date."""
    return [f"{d.day} {d.strftime('%b')}" for d in days]


def _nice_ceiling(value: float) -> float:
    """The axis's top: the value rounded up to 1, 2 or 5 times a power of ten (at least 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for multiple in (1, 2, 5, 10):
        if value <= multiple * power:
            return multiple * power
    return 10 * power


def _n(value: float) -> str:
    return number_format(int(value), force_grouping=True) if value == int(value) else f"{value}"


def _f(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


__all__ = ["COLOURS", "Chart", "Series", "day_labels"]
