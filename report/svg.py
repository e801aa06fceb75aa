"""Plots as inline SVG: horizontal bars of named values, and histograms with one series or several side by
side. Labels are escaped text; sizes are computed here, never taken from the data as markup."""

import itertools
import math

from report.html import number, text

COLORS = ("#3b6ea8", "#d0813a", "#5a9e6f", "#9a5ea8", "#a85e5e")
ROW, LABEL, BAR, PAD = 18, 230, 300, 170
MAX_BARS = 100  # bars drawn of one plot, at most: a stats.json from elsewhere of 200,000 sizes drew 66 MB


def _label(value: str, limit: int = 38) -> str:
    return text(value if len(value) <= limit else value[:limit - 1] + "…")


def bars(values: dict[str, float], unit: str = "") -> str:
    """One bar per name, scaled to the largest value (a value that is not a finite number is left out); the
    first MAX_BARS, and a line counting the rest."""
    values = {name: value for name, value in values.items() if math.isfinite(value)}
    if not values:
        return ""
    top = max(max(values.values()), 1e-12)
    left_out = len(values) - MAX_BARS
    values = dict(itertools.islice(values.items(), MAX_BARS))
    height = ROW * (len(values) + (left_out > 0)) + 4
    parts = [f'<svg class="plot" width="{LABEL + BAR + PAD}" height="{height}" role="img">']
    for i, (name, value) in enumerate(values.items()):
        y = i * ROW + 2
        width = max(1.0, BAR * max(value, 0) / top)
        parts.append(f'<text x="{LABEL - 6}" y="{y + 12}" text-anchor="end">{_label(name)}</text>'
                     f'<rect x="{LABEL}" y="{y + 2}" width="{width:.1f}" height="{ROW - 5}" fill="{COLORS[0]}"/>'
                     f'<text x="{LABEL + width + 4:.1f}" y="{y + 12}">{number(value)} {text(unit)}</text>')
    if left_out > 0:
        parts.append(f'<text x="{LABEL}" y="{len(values) * ROW + 14}">{left_out:,} more not drawn</text>')
    parts.append("</svg>")
    return "".join(parts)


def share_bar(share: float, width: int = 120) -> str:
    """A small bar of a share in [0, 1], for a reason's line."""
    filled = max(0.0, min(1.0, share)) * width
    return (f'<svg class="share" width="{width}" height="10" role="img"><rect width="{width}" height="10" '
            f'fill="#e4e8ee"/><rect width="{filled:.1f}" height="10" fill="{COLORS[1]}"/></svg>')


def histogram(labels: list[str], series: dict[str, list[int]], normalized: bool = True) -> str:
    """Bins left to right, the series' bars side by side in each; each series as shares of its total when
    `normalized` (kept and rejected differ in size), the counts in the tooltips' place: the table below."""
    if not labels or not series:
        return ""
    totals = {name: max(sum(values), 1) for name, values in series.items()}
    heights = {name: [v / totals[name] if normalized else v for v in values] for name, values in series.items()}
    top = max((h for values in heights.values() for h in values), default=0) or 1
    bin_width = max(20, min(48, 720 // len(labels)))
    plot_height, left, bottom = 140, 40, 46
    width = left + bin_width * len(labels) + 10
    bar = (bin_width - 4) / len(series)
    parts = [f'<svg class="plot" width="{width}" height="{plot_height + bottom + 20}" role="img">',
             f'<text x="2" y="12">{"share" if normalized else "count"}</text>',
             f'<line x1="{left}" y1="{plot_height + 16}" x2="{width - 6}" y2="{plot_height + 16}" stroke="#999"/>']
    for i, label in enumerate(labels):
        x0 = left + i * bin_width + 2
        for k, name in enumerate(series):
            h = plot_height * heights[name][i] / top if i < len(heights[name]) else 0
            parts.append(f'<rect x="{x0 + k * bar:.1f}" y="{plot_height + 16 - h:.1f}" width="{bar - 1:.1f}" '
                         f'height="{h:.1f}" fill="{COLORS[k % len(COLORS)]}"/>')
        parts.append(f'<text x="{x0 + bin_width / 2 - 2:.1f}" y="{plot_height + 30}" text-anchor="end" '
                     f'transform="rotate(-40 {x0 + bin_width / 2 - 2:.1f} {plot_height + 30})">{_label(label, 12)}'
                     "</text>")
    for k, name in enumerate(series):
        x = left + k * 150
        parts.append(f'<rect x="{x}" y="{plot_height + bottom + 8}" width="10" height="10" '
                     f'fill="{COLORS[k % len(COLORS)]}"/><text x="{x + 14}" y="{plot_height + bottom + 17}">'
                     f"{_label(name, 18)} ({number(sum(series[name]))})</text>")
    parts.append("</svg>")
    return "".join(parts)
