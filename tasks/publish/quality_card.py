"""The card's calibration and bias sections: a reliability diagram (SVG, no plotting library), ECE and Brier
score overall and per domain with the labelled pairs behind each, and the bias table of the pool beside the
version's own."""

from __future__ import annotations

from typing import Any

from common.numbers import count, percent

RELIABILITY_PLOT = "reliability.svg"


def reliability_svg(bins: list[dict[str, Any]], ece: float | None, labelled: int) -> str:
    """Observed rate against mean predicted p_correct per bin (dot size by count), with the diagonal."""
    size, pad = 320, 40
    plot = size - 2 * pad

    def x(v: float) -> float:
        return pad + v * plot

    def y(v: float) -> float:
        return pad + (1 - v) * plot

    top = max((b["count"] for b in bins), default=1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" font-family="sans-serif" '
             'font-size="11">',
             f'<text x="{pad}" y="{pad - 16}">reliability of p_correct (n={labelled}, ECE '
             f'{"-" if ece is None else f"{ece:.3f}"})</text>',
             f'<rect x="{pad}" y="{pad}" width="{plot}" height="{plot}" fill="none" stroke="#999"/>',
             f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(1)}" stroke="#bbb" stroke-dasharray="4 3"/>']
    points = [(x(b["predicted"]), y(b["observed"])) for b in bins]
    if len(points) > 1:
        parts.append('<polyline fill="none" stroke="#4c78a8" points="'
                     + " ".join(f"{px:.1f},{py:.1f}" for px, py in points) + '"/>')
    for b, (px, py) in zip(bins, points):
        r = 2.5 + 5.5 * (b["count"] / top) ** 0.5
        parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{r:.1f}" fill="#4c78a8"><title>predicted '
                     f'{b["predicted"]:.3f}, observed {b["observed"]:.3f}, {b["count"]} pairs</title></circle>')
    parts += [f'<text x="{pad}" y="{size - pad + 16}">0</text>',
              f'<text x="{size - pad - 6}" y="{size - pad + 16}">1</text>',
              f'<text x="{size // 2 - 40}" y="{size - 8}">mean predicted</text>',
              f'<text x="6" y="{pad + 4}">observed</text>', "</svg>"]
    return "\n".join(parts)


def _num(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def calibration_markdown(calibration: dict[str, Any] | None) -> str:
    if not calibration:
        return "No calibration was computed for this version."
    if calibration.get("status") != "fitted":
        return (f"**No calibrated p_correct**: {calibration.get('note', 'too few labelled pairs')}. The "
                "`p_correct` column is empty; `confidence` (the heuristic) is the only confidence here.")
    lines = [
        f"`p_correct` is the probability that the judge's direction matches a clear human preference, fitted by "
        f"{calibration['method']} on {count(calibration['labelled'])} pairs with a clear human label (HelpSteer3 "
        "|overall_preference| >= 2; arena votes that are neither ties nor both-bad). Each labelled pair's "
        "probability comes from a model that never saw its label; the figures below are measured on those.",
        "",
        f"![reliability diagram]({RELIABILITY_PLOT})",
        "",
        "| | labelled pairs | ECE | Brier |",
        "|---|---:|---:|---:|",
        f"| all | {count(calibration['labelled'])} | {_num(calibration.get('ece'))} | {_num(calibration.get('brier'))} |",
    ]
    for domain, d in (calibration.get("by_domain") or {}).items():
        if d.get("ece") is None:
            lines.append(f"| {domain} | {count(d['labelled'])} | {d.get('note', 'too few')} | - |")
        else:
            lines.append(f"| {domain} | {count(d['labelled'])} | {_num(d['ece'])} | {_num(d['brier'])} |")
    if calibration.get("kept_mean_p_correct") is not None:
        lines += ["", f"Mean p_correct of the kept pairs: {calibration['kept_mean_p_correct']:.3f}."]
    return "\n".join(lines)


_share = percent


def bias_markdown(bias: dict[str, Any] | None, pairs_judged: int | None = None, pairs_kept: int | None = None) -> str:
    """The bias table of the judged pool beside the version's; its shares are of the pairs with a chosen side
    (a judge tie has none)."""
    if not bias:
        return "No bias audit was computed for this version."
    pool, kept = bias.get("pool", {}), bias.get("kept", {})

    def ratio(b: dict[str, Any]) -> str:
        q = b.get("length_ratio")
        return "-" if not q else f"{q['p10']} / {q['p50']} / {q['p90']}"

    lines = [
        "| | judged pool (before the filter) | this version |",
        "|---|---:|---:|",
        *([f"| pairs judged / kept | {count(pairs_judged)} | {count(pairs_kept)} |"] if pairs_judged is not None else []),
        f"| pairs with a chosen side (judge ties have none; the shares below are of these) | "
        f"{count(pool.get('pairs', 0))} | {count(kept.get('pairs', 0))} |",
        f"| chosen answer is the longer | {_share(pool.get('chosen_longer_share'))} | "
        f"{_share(kept.get('chosen_longer_share'))} |",
        f"| length ratio chosen / rejected (p10 / p50 / p90) | {ratio(pool)} | {ratio(kept)} |",
        f"| chosen has more markdown (headers, lists, bold) | {_share(pool.get('chosen_more_markdown_share'))} | "
        f"{_share(kept.get('chosen_more_markdown_share'))} |",
        f"| chosen was shown first (response A) | {_share(pool.get('chosen_first_share'))} | "
        f"{_share(kept.get('chosen_first_share'))} |",
    ]
    families = sorted(set(pool.get("model_families", {})) | set(kept.get("model_families", {})))
    if families:
        lines += ["", "Arena rows, win rate of each model family (chosen over rejected; pairs in parentheses):", "",
                  "| model family | judged pool | this version |", "|---|---:|---:|"]
        for f in families:
            cells = []
            for b in (pool, kept):
                m = b.get("model_families", {}).get(f)
                cells.append("-" if m is None else f"{percent(m['win_rate'])} ({count(m['pairs'])})")
            lines.append(f"| {f} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)
