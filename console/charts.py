"""The event feed's chart, drawn on the server as SVG: decisions per hour, stacked."""

from __future__ import annotations

from dataclasses import dataclass

from console.selectors import CHART_SERIES

COLOURS = {"allow": "#1f7a3a", "confirm": "#c27c0e", "refuse": "#b42318"}
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 180, 36, 22, 8


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str


def stacked_bars(buckets: list[dict]) -> dict:
    """Rectangles, axis labels and a legend for `decisions_per_hour`'s buckets."""
    peak = max((sum(b[s] for s in CHART_SERIES) for b in buckets), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - 4, HEIGHT - BOTTOM - TOP
    slot = plot_w / max(len(buckets), 1)
    bars: list[Bar] = []
    labels = []
    for i, bucket in enumerate(buckets):
        x = LEFT + i * slot + 1
        base = TOP + plot_h
        for series in CHART_SERIES:
            n = bucket[series]
            if not n:
                continue
            h = plot_h * n / peak
            base -= h
            hour = bucket["hour"].strftime("%Y-%m-%d %H:00")
            bars.append(Bar(x, base, slot - 2, h, COLOURS[series], f"{hour} UTC: {n} {series}"))
        if i % 3 == 0:
            labels.append({"x": x + (slot - 2) / 2, "text": bucket["hour"].strftime("%H:00")})
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "bars": bars,
        "labels": labels,
        "peak": peak,
        "label_y": HEIGHT - 6,
        "peak_y": TOP + 10,
        "axis_y": TOP + plot_h,
        "left": LEFT,
        "legend": [
            {"name": s, "colour": COLOURS[s], "total": sum(b[s] for b in buckets)}
            for s in CHART_SERIES
        ],
    }
