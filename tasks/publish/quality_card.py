"""The card's calibration, certification and bias sections: a reliability diagram and a risk-coverage curve (SVG,
no plotting library), ECE and Brier score overall and per domain with the labelled pairs behind each, a certified
version's guarantee, and the bias table of the pool beside the version's own."""

from __future__ import annotations

import math
from typing import Any

from common.numbers import count, percent

RELIABILITY_PLOT = "reliability.svg"
RISK_COVERAGE_PLOT = "risk_coverage.svg"


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


def labels_markdown(sources: dict[str, dict[str, Any]]) -> str:
    """Which sources of the judged pool carried labels, people's or a model's, and from which |label| each counts
    as clear, as the facts stored with their pairs say (`stats.source_facts`); a source with no facts stored is
    said to be read by the defaults."""
    def said(name: str, s: dict[str, Any]) -> str:
        if s.get("facts") == "assumed":
            return (f"{name} ({count(s['labelled'])} labelled pairs; no facts stored with its pairs: read by the "
                    f"defaults, people's labels, clear from |label| {s['clear_label']:g}, one step of the scale)")
        return f"{name} ({count(s['labelled'])} labelled pairs, clear from |label| {s['clear_label']:g})"

    carrying = {n: s for n, s in sources.items() if s.get("labelled")}
    human = [said(n, s) for n, s in carrying.items() if s.get("human_labels")]
    model = [said(n, s) for n, s in carrying.items() if not s.get("human_labels")]
    none = [n for n in sources if n not in carrying]
    parts = [f"Human labels came from {'; '.join(human) if human else 'no source'}."]
    if model:
        parts.append(f"Labels given by a model, not people, counted alike: {'; '.join(model)}.")
    if none:
        parts.append(f"No labels: {', '.join(none)}.")
    return " ".join(parts)


def calibration_markdown(calibration: dict[str, Any] | None, sources: dict[str, dict[str, Any]] | None = None) -> str:
    """The calibration section; `sources` (`stats.source_facts`, recorded by versions built since the facts travel
    with the pairs) adds which sources carried labels."""
    if not calibration:
        return "No calibration was computed for this version." + (f"\n\n{labels_markdown(sources)}" if sources else "")
    if calibration.get("status") != "fitted":
        return (f"**No calibrated p_correct**: {calibration.get('note', 'too few labelled pairs')}. The "
                "`p_correct` column is empty; `confidence` (the heuristic) is the only confidence here."
                + (f"\n\n{labels_markdown(sources)}" if sources else ""))
    rule = ("|label| at least its source's clear label, below" if sources else
            "HelpSteer3 |overall_preference| >= 2; arena votes that are neither ties nor both-bad")
    lines = [
        f"`p_correct` is the probability that the judge's direction matches a clear human preference, fitted by "
        f"{calibration['method']} on {count(calibration['labelled'])} pairs with a clear human label ({rule}). "
        "Each labelled pair's "
        "probability comes from a model that never saw its label; the figures below are measured on those.",
        *(["", labels_markdown(sources)] if sources else []),
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


# -- a certified version's guarantee (`stats.certification`, `tasks.curate.certification.certification_report`) --

CERTIFIED_ON = {"audit": "from a review audit of the sources it sampled",
                "source": "from each source's own clear labels, each source's pairs certified on its own",
                "mixed": "from a review audit of the sources it sampled and each other source's own clear labels, "
                         "each source's pairs certified on its own"}
SCORED_BY = {"p_correct": "p_correct of a model fitted on the other labelled pairs (never on a held-out one)",
             "confidence": "the judge's own confidence (too few other labelled pairs for a model)"}
CURVE_ROWS = 8  # thresholds shown of the risk-coverage curve, the certified one among them


def confidence_level(risk: float) -> str:
    """1 - risk as people say it: 0.05 -> '95%', 0.025 -> '97.5%'."""
    return f"{round(100 * (1 - risk), 6):g}%"


def risk_coverage_svg(cert: dict[str, Any]) -> str:
    """The certification's risk-coverage curve: the agreement each threshold tried certifies (1 - its bound)
    against the share of the judged pool it accepts, one line through every threshold tried, a dot (with its
    figures) at each threshold the card's table shows, the certified one filled in red, and the target dashed."""
    width, height, pad = 480, 320, 48
    plot_w, plot_h = width - 2 * pad, height - 2 * pad
    curve = cert.get("curve") or []
    target = cert["target_agreement"]
    # the agreement axis starts at a round figure below the lowest point and the target, so the points near the
    # target are not squeezed against the top by a threshold that certified nothing
    low = min([target] + [p["agreement_bound"] for p in curve])
    bottom = min(target - 0.05, math.floor(low * 20) / 20)

    def x(coverage: float) -> float:
        return pad + coverage * plot_w

    def y(agreement: float) -> float:
        return pad + (1 - (agreement - bottom) / (1 - bottom)) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             'font-size="11">',
             f'<text x="{pad}" y="{pad - 20}">certified agreement against coverage ({cert["thresholds_tested"]} '
             f'thresholds tried, risk {cert["risk"]:g})</text>',
             f'<rect x="{pad}" y="{pad}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
             f'<line class="target" x1="{x(0):.1f}" y1="{y(target):.1f}" x2="{x(1):.1f}" y2="{y(target):.1f}" '
             f'stroke="#bbb" stroke-dasharray="4 3"><title>target {percent(target)}</title></line>',
             f'<text x="{x(1) - 70:.1f}" y="{y(target) - 4:.1f}">target {percent(target)}</text>']
    drawn = [p for p in curve if p["coverage"] is not None]
    if len(drawn) > 1:
        parts.append('<polyline class="curve" fill="none" stroke="#4c78a8" points="'
                     + " ".join(f"{x(p['coverage']):.1f},{y(p['agreement_bound']):.1f}" for p in drawn) + '"/>')
    chosen = cert.get("threshold") if cert.get("certified") else object()
    for p in curve_rows(curve, cert.get("threshold")):
        if p["coverage"] is None:
            continue
        certified = p["threshold"] == chosen
        parts.append(
            f'<circle cx="{x(p["coverage"]):.1f}" cy="{y(p["agreement_bound"]):.1f}" r="{5 if certified else 3.5}" '
            f'fill="{"#e45756" if certified else "#4c78a8"}" data-threshold="{p["threshold"]}" '
            f'data-coverage="{p["coverage"]}" data-agreement="{p["agreement_bound"]}"><title>'
            f'{threshold_text(p["threshold"])}{" (certified)" if certified else ""}: coverage '
            f'{percent(p["coverage"])}, certified agreement {percent(p["agreement_bound"])}</title></circle>')
    parts += [f'<text x="{pad}" y="{height - pad + 16}">0%</text>',
              f'<text x="{width - pad - 24}" y="{height - pad + 16}">100%</text>',
              f'<text x="{width // 2 - 70}" y="{height - 10}">coverage of the judged pool</text>',
              f'<text x="4" y="{pad + 4}">{percent(1.0)}</text>',
              f'<text x="4" y="{height - pad}">{percent(bottom)}</text>',
              f'<text x="4" y="{pad - 6}">certified agreement</text>', "</svg>"]
    return "\n".join(parts)


def _by_source(counts: dict[str, int]) -> str:
    return "; ".join(f"{count(n)} from {name}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def guarantee_paragraph(cert: dict[str, Any] | None) -> str:
    """The card's first words of a certified version ("" for any other): the target, the risk and the rows the
    statement covers, by source; then the rows it does not cover (left out, or kept uncertified), the rows reviewers
    chose, the labels left out of calibration, and the held-out pairs' own agreement as an estimate."""
    if not cert or not cert.get("certified"):
        return ""
    by = cert.get("kept_by_source")
    if by is None:  # a version stored before its rows were counted by source
        covered = {"": cert.get("kept_certified", cert["accepted"])}
    else:
        covered = {s: r["certified"] for s, r in by.items() if r["certified"]}
    total = sum(covered.values())
    where = f" ({_by_source(covered)})" if by is not None else ""
    split = cert.get("populations_split", 1)
    level = confidence_level(cert["risk"])
    text = [f"**At least {percent(cert['target_agreement'])} of the {count(total)} certified pairs{where} have chosen "
            f"answers that agree with human preference, with {level} confidence** (certified on "
            f"{count(cert['calibration_pairs'])} held-out labelled pairs {CERTIFIED_ON[cert['labels']]}"
            + (f", the risk split over {split} populations" if split > 1 else "")
            + (f"; attempt {cert['attempt']} on these labels, tested at risk {cert['risk_spent']:.4g} so that every "
               f"attempt together stays within {cert['risk']:g}" if cert.get("attempt") else "") + ")."]
    kept_out = {s: r["not_covered"] for s, r in (by or {}).items() if r["not_covered"]}
    left_out = cert.get("not_covered") or {}
    if kept_out:
        text.append(f"{count(sum(kept_out.values()))} pairs no calibration label speaks for are kept uncertified "
                    f"({_by_source(kept_out)}): the statement says nothing of them.")
    elif left_out:
        text.append(f"{count(sum(left_out.values()))} judged pairs no calibration label speaks for were left out "
                    f"({_by_source(left_out)}).")
    reviewed = sum(r["by_reviewers"] for r in (by or {}).values())
    if reviewed:
        text.append(f"{count(reviewed)} pairs are kept with their reviewers' choice.")
    for name, why in sorted((cert.get("excluded_labels") or {}).items()):
        text.append(f"The labels of {name} do not calibrate: {why}.")
    leaning = (cert.get("score") or {}).get("leans_on")
    if leaning:
        explained = cert["score"]["explained"]
        text.append(f"The score that selected these pairs follows the chosen answer's {leaning} more than the judge's "
                    f"verdicts (it explains {explained[leaning]:.0%} of the score's variance, the judge's margin "
                    f"{explained['judge_margin']:.0%}): the selection leans on {leaning}.")
    if cert.get("estimated_agreement") is not None:
        text.append(f"The held-out pairs the certified thresholds accept agree {percent(cert['estimated_agreement'])} "
                    "of the time: an estimate, not a bound.")
    return " ".join(text)


def threshold_text(threshold: float | None) -> str:
    return "every scored pair" if threshold is None else f">= {threshold:.4f}"


def curve_rows(curve: list[dict[str, Any]], chosen: float | None) -> list[dict[str, Any]]:
    """At most CURVE_ROWS points of the curve, evenly spaced, the certified threshold and the last tried kept."""
    if len(curve) <= CURVE_ROWS:
        return curve
    step = (len(curve) - 1) / (CURVE_ROWS - 1)
    picked = {round(i * step) for i in range(CURVE_ROWS)}
    picked |= {i for i, p in enumerate(curve) if p["threshold"] == chosen}
    return [curve[i] for i in sorted(picked)]


def _mix_rows(mix: dict[str, Any], what: str, limit: int = 10) -> list[str]:
    judged, labelled = mix.get("judged") or {}, mix.get("labelled") or {}
    return [f"| {what} {k} | {percent(judged.get(k, 0.0))} | {percent(labelled.get(k, 0.0))} |"
            for k in list(judged)[:limit]]


def certification_markdown(cert: dict[str, Any], stats: dict[str, Any]) -> str:
    """How the guarantee was made, what it covers, what came after it, and the risk-coverage curve."""
    chosen = cert.get("threshold")
    scored = SCORED_BY.get(cert["scored_by"], cert["scored_by"])
    kept = stats.get("pairs_kept")
    lines = [
        f"Target agreement {percent(cert['target_agreement'])} at risk {cert['risk']:g} (the chance the guarantee "
        f"fails). A pair is kept when its score, {scored}, is at least a threshold chosen by fixed-sequence testing "
        "(Learn then Test; Jung, Brahman & Choi, \"Trust or Escalate\", arXiv 2407.18370): thresholds fixed before "
        f"any held-out label is read are tried from strict to loose, each passing while the "
        f"{confidence_level(cert['risk'])} upper bound on the disagreement of the held-out pairs it accepts stays "
        f"within {percent(1 - cert['target_agreement'])}; the loosest that passed is kept. The bound: "
        f"{cert['bound']}.",
        "",
        "| | |", "|---|---|",
        f"| threshold | {threshold_text(chosen)} ({cert['thresholds_tested']} thresholds tried) |",
        f"| held-out labelled pairs ({cert['labels']} labels) | {count(cert['calibration_pairs'])} |",
        f"| of them accepted / disagreeing with the person | {count(cert['calibration_accepted'])} / "
        f"{count(cert['calibration_disagreements'])} |",
        f"| estimated agreement of the accepted held-out pairs (an estimate, not a bound) | "
        f"{percent(cert.get('estimated_agreement'))} |",
        f"| pairs certified / judged (coverage) | {count(cert['accepted'])} / {count(cert['judged'])} "
        f"({percent(cert['coverage'])}) |",
    ]
    score = cert.get("score")
    if score:
        lines.append(f"| the score (each row's `certification_score`, not the judge's `p_correct`) reads | "
                     f"{'; '.join(score['features'])} |")
    if cert.get("attempt"):
        attempts = cert.get("attempts", cert["attempt"])
        lines.append(f"| attempt on these labels (attempts so far) | {cert['attempt']} ({attempts}), tested at risk "
                     f"{cert['risk_spent']:.4g} |")
    if cert.get("kept_not_covered"):
        lines.append(f"| rows kept uncertified (no calibration label speaks for them) | "
                     f"{count(cert['kept_not_covered'])} |")
    if "kept_certified" in cert:
        lines.append(f"| rows of this version: certified / decided by reviewers | {count(cert['kept_certified'])} / "
                     f"{count(cert['kept_by_reviewers'])} (of {count(kept)}) |")
    lines += [
        "",
        "The policy's filters that read a source's label (both-bad, human ties, human disagreement), its caps and "
        "its bias controls apply after the certification and keep a subset of the certified pairs: the guarantee is "
        "made for the certified pairs as a whole. Pairs reviewers decided are kept with the reviewers' choice, "
        "certified or not (a person chose them). The judge's heuristic cut-offs (min_abs_margin, min_confidence, "
        "min_p_correct) play no part.",
    ]
    populations = cert.get("populations") or {}
    if len(populations) > 1:
        lines += ["", f"Each population is certified on its own held-out pairs at risk "
                  f"{cert['risk_per_population']:.4g} (the risk {cert['risk']:g} split over "
                  f"{cert['populations_split']}), so the statement holds of every certified pair at once:", "",
                  "| population | pairs | held-out | threshold | accepted held-out / disagreeing | certified |",
                  "|---|---:|---:|---|---:|---|"]
        for name, p in populations.items():
            lines.append(f"| {name} | {count(p['pairs'])} | {count(p['calibration_pairs'])} | "
                         f"{threshold_text(p['threshold']) if p['certified'] else '–'} | "
                         f"{count(p['calibration_accepted'])} / {count(p['calibration_disagreements'])} | "
                         f"{'yes' if p['certified'] else 'no'} |")
    if cert["labels"] in ("source", "mixed"):
        mix = cert.get("population") or {}
        lines += ["", f"Certified on each source's clear labels, the guarantee covers that source's pairs like those: "
                  f"{percent(mix.get('labelled_share'))} of the judged pool ({count(mix.get('labelled'))} of "
                  f"{count(mix.get('judged'))} pairs) has a clear source label, and these differ from the rest as "
                  "follows. A review audit of at least "
                  f"{count(cert.get('min_audit_reviews'))} decided pairs certifies on the whole pool instead.", "",
                  "| | judged pool | pairs with a clear label |", "|---|---:|---:|",
                  *_mix_rows(mix.get("by_source") or {}, "source"), *_mix_rows(mix.get("by_domain") or {}, "domain")]
    curve = curve_rows(cert.get("curve") or [], chosen)
    if curve:
        lines += ["", f"![risk-coverage curve: certified agreement against coverage]({RISK_COVERAGE_PLOT})", "",
                  "Risk and coverage at thresholds tried (strict to loose; the test stops at the first that "
                  "fails; the plot draws every threshold tried and marks these):", "", "| threshold | coverage of the judged pool | held-out accepted | disagreeing | "
                  "agreement it certifies |", "|---|---:|---:|---:|---:|"]
        for p in curve:
            mark = " (certified)" if p["threshold"] == chosen else ""
            lines.append(f"| {threshold_text(p['threshold'])}{mark} | {percent(p['coverage'])} | "
                         f"{count(p['calibration_accepted'])} | {count(p['disagreements'])} | "
                         f"{percent(p['agreement_bound'])} |")
    return "\n".join(lines)
