"""Human-readable reports written beside a job's stats.json."""

BAR_WIDTH = 40


def bar_chart(counts: dict[str, int], total: int) -> list[str]:
    """A text bar chart: readable in a terminal, in a Markdown viewer, and in a diff."""
    if not counts:
        return ["(none)"]
    width = max(len(k) for k in counts)
    top = max(counts.values())
    return [f"{name:<{width}}  {'█' * max(1, round(BAR_WIDTH * n / top))} {n} ({100 * n / max(1, total):.1f}%)"
            for name, n in counts.items()]


def removal_report(stats: dict) -> str:
    lines = ["# Cleaning report", "",
             f"Input {stats['input']} records: kept {stats['kept']}, rejected {stats['rejected']}, "
             f"quarantined {stats['quarantined']}.", "", "## Removals per rule", "", "```"]
    lines += bar_chart(stats["rejected_by_reason"], stats["input"])
    lines += ["```", ""]
    if stats["file_errors"]:
        lines += ["## Damaged files", ""] + [f"- `{e['file']}`: {e['error']}" for e in stats["file_errors"]] + [""]
    if stats["file_warnings"]:
        lines += ["## Ignored bytes", ""] + [f"- `{w['file']}`: {w['warning']}" for w in stats["file_warnings"]] + [""]
    return "\n".join(lines)
