"""The dataset card: README.md with Hugging Face YAML front matter, and an SVG plot of the margin and
confidence distributions (no plotting library needed)."""

from __future__ import annotations

import json
from typing import Any

from common.numbers import count, percent, rate
from tasks.curate.exports import EXPORTS, REVIEWED_ROWS, Export, export_settings
from tasks.curate.figures import size_category
from tasks.publish.quality_card import bias_markdown, calibration_markdown, certification_markdown, guarantee_paragraph
from tasks.publish.review_card import review_markdown

BINS = 10


def histogram(values: list[float], low: float, high: float, bins: int = BINS) -> list[int]:
    counts = [0] * bins
    for v in values:
        i = min(bins - 1, max(0, int((v - low) / (high - low) * bins)))
        counts[i] += 1
    return counts


def distributions_svg(margins: list[float], confidences: list[float]) -> str:
    """Two bar charts side by side: margin (0..2.5) and confidence (0..1)."""
    width, height, pad = 640, 240, 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">']
    for k, (title, values, high) in enumerate((("margin from the chosen side", margins, 2.5), ("confidence", confidences, 1.0))):
        counts = histogram(values, 0.0, high)
        top = max(counts) or 1
        x0 = k * width // 2 + pad
        plot_w, plot_h = width // 2 - 2 * pad, height - 2 * pad - 10
        bar = plot_w / len(counts)
        parts.append(f'<text x="{x0}" y="{pad - 10}">{title} (n={len(values)})</text>')
        for i, c in enumerate(counts):
            h = plot_h * c / top
            parts.append(f'<rect x="{x0 + i * bar:.1f}" y="{pad + plot_h - h:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" fill="#4c78a8"><title>{c}</title></rect>')
        parts.append(f'<text x="{x0}" y="{pad + plot_h + 14}">0</text>')
        parts.append(f'<text x="{x0 + plot_w - 16}" y="{pad + plot_h + 14}">{high:g}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    s = sorted(values)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return " / ".join(f"{pick(q):.2f}" for q in (0.1, 0.25, 0.5, 0.75, 0.9))


def _table(counts: dict[str, Any], header: str = "rows") -> str:
    align = "---:" if header == "rows" else "---"
    lines = [f"| | {header} |", f"|---|{align}|"] + [
        f"| {k} | {count(v) if header == 'rows' else v} |" for k, v in counts.items()]
    return "\n".join(lines)


LICENSE_FILE = "LICENSE.md"
SIMULATED_NOTICE = (
    "> **SIMULATED VERDICTS.** This version was judged by the GenRM **stand-in**, a test server whose verdicts "
    "are simulated (a hash of the text, not a model's reading). Its rankings, margins and confidences say "
    "nothing about which answer is better. It exists to test the pipeline; do not train on it.")


def other_weights_notice(weights: str, model: str | None) -> str:
    return (f"> **OTHER WEIGHTS.** This version was judged by a server that loaded `{weights}`, not the published "
            f"weights of `{model}`, whatever name it answered under. Its rankings, margins and confidences are those "
            "weights' verdicts, not the judge's; the judge configuration below names them.")


def license_fields(licenses: list[str]) -> dict[str, str]:
    """The Hub's license fields: one id when every source has the same plain license, else `other` with a
    name and a link to the file that lists each source's terms."""
    ids = {entry.split(": ", 1)[-1] for entry in licenses}
    if len(ids) == 1 and " " not in next(iter(ids)):
        return {"license": next(iter(ids))}
    return {"license": "other", "license_name": "per-source-licenses", "license_link": LICENSE_FILE}


def license_markdown(licenses: list[str]) -> str:
    return "# Licenses\n\nThis dataset carries each source's terms:\n\n" + "".join(f"- {e}\n" for e in licenses)


REVIEWED_NOTE = (
    "Rows that reviewers decided say so: every config has `reviewed` (true for them), `reviewers_choice` (the side "
    "of the pair the reviewers' majority chose, `a` or `b`: the row's chosen answer) and `reviewers` (how many "
    "voted; 0 on the judge's rows). Their `confidence` and `p_correct` are null: those are the judge's certainty, "
    "and a person chose these rows' side; `judge_margin` stays the judge's margin from the chosen side (negative "
    "where the reviewers overrode the judge). No TRL trainer reads these columns.")


def exports_section(exports: list[Export], policy: dict[str, Any]) -> str:
    """Each published export's load_dataset example (comments aligned) in one code block, then the notes the
    exports give under the version's export settings (`exports.export_settings`: the policy, and whether
    reviewers decided rows)."""
    calls = [(f'{e.card_variable} = load_dataset("<this repo or folder>", "{e.name}")', e.card_summary)
             for e in exports]
    width = max((len(call) for call, _ in calls), default=0) + 3
    block = "\n".join(f"{call:<{width}}# {summary}" for call, summary in calls)
    notes = [note for e in exports if (note := e.card_note(policy))]
    if policy.get(REVIEWED_ROWS):
        notes.append(REVIEWED_NOTE)
    return "\n\n".join([f"```python\nfrom datasets import load_dataset\n{block}\n```", *notes])


def _cost_section(cost: dict[str, Any] | None) -> str:
    if not cost:
        return "not recorded for this version"
    return (f"Every judgment of this judge configuration up to this version: {count(cost['requests'])} requests, "
            f"{count(cost['tokens_in'])} prompt and {count(cost['tokens_out'])} generated tokens, "
            f"{rate(cost['judge_seconds'])} request-seconds; {count(cost['tokens_per_kept_pair'])} tokens per kept pair. "
            f"Estimated {rate(cost['gpu_hours'])} GPU-hours, {rate(cost['gpu_hours_per_1000_kept'])} per 1,000 kept pairs, "
            f"assuming {count(cost['assumed_server_tokens_per_second'])} tokens/s per server of "
            f"{cost['assumed_gpus_per_server']} GPUs (an estimate from a configured throughput, not a measurement).")


STANDIN = "GenRM stand-in (SIMULATED verdicts, testing/genrm_standin.py)"


def judge_block(judge_config: dict[str, Any], simulated: bool, weights: str | None = None) -> dict[str, Any]:
    """The judge configuration as the card shows it: a SIMULATED one names the stand-in that answered, and one of
    other weights names them, each with the model it answered as apart, so no reader takes the model for the
    judge."""
    judge_config = {k: v for k, v in judge_config.items() if not (k == "weights" and not v)}
    if simulated:
        return {**judge_config, "model": STANDIN, "stands_in_for": judge_config.get("model"), "simulated": True}
    if weights:
        return {**judge_config, "model": f"{weights} (other weights)", "served_as": judge_config.get("model"),
                "weights": weights}
    return judge_config


def _counts_section(stats: dict[str, Any], rows: int) -> str:
    """Pairs judged and kept, what was not judged, and the splits (`tasks.curate.figures`)."""
    judged = stats.get("pairs_judged")
    if judged is None:  # a version built before these figures were recorded
        return f"{count(rows)} rows kept. Splits: {json.dumps(stats.get('splits'))} (by prompt: no prompt is in both)."
    not_judged = stats.get("not_judged") or {}
    dropped = sum((stats.get("dropped") or {}).values())
    lines = [f"{count(rows)} pairs kept of {count(judged)} pairs judged (the judged pool); {count(dropped)} dropped, "
             "by reason below."]
    if not_judged.get("pairs"):
        lines.append(f"{count(not_judged['pairs'])} pairs of the warehouse were not judged "
                     f"({count(not_judged.get('contaminated', 0))} of them contaminated: evaluation prompts are kept out "
                     "of judging) and are not in the pool.")
    splits = ", ".join(f"{k} {count(v)}" for k, v in (stats.get("splits") or {}).items())
    lines.append(f"Splits: {splits} (by prompt: no prompt is in both).")
    return "\n".join(lines)


def agreement_markdown(agreement: dict[str, Any] | None) -> str:
    """Agreement with human labels, in the judged pool and in the version (`tasks.curate.figures`)."""
    if not agreement:
        return "Not recorded for this version."
    pool, kept = agreement.get("pool") or {}, agreement.get("kept") or {}
    rows = [("agreement", percent(pool.get("rate")), percent(kept.get("rate"))),
            ("pairs where both prefer a side (agree / all)", f"{count(pool.get('agree'))} / {count(pool.get('comparable'))}",
             f"{count(kept.get('agree'))} / {count(kept.get('comparable'))}"),
            ("human ties (not counted)", count(pool.get("human_ties")), count(kept.get("human_ties"))),
            ("both-bad votes (not counted)", count(pool.get("both_bad")), count(kept.get("both_bad"))),
            ("judge ties (not counted)", count(pool.get("judge_ties")), count(kept.get("judge_ties"))),
            ("pairs with a human label", count(pool.get("labelled")), count(kept.get("labelled")))]
    return ("Of the pairs where the human label and the judge both prefer a side, the share where they prefer the "
            "same one. Ties and both-bad votes are reported apart, never counted as disagreement.\n\n"
            "| | judged pool | this version |\n|---|---:|---:|\n" + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows))


def lengths_markdown(lengths: dict[str, Any] | None) -> str:
    """Token lengths of the kept rows and the max_length that keeps 95% / 99% of them whole."""
    if not lengths or not lengths.get("rows"):
        return "Not recorded for this version."
    how = ("Estimated, not counted with the judge's tokenizer: one token per 3 UTF-8 bytes and one per digit "
           "(conservative for Qwen-family tokenizers), plus 8 per message for the chat template."
           if lengths.get("counted_by") == "estimate" else f"Counted by {lengths.get('counted_by')}.")
    keep = lengths.get("max_length_keeping") or {}
    table = ["| tokens | p50 | p90 | p99 | max |", "|---|---:|---:|---:|---:|"] + [
        f"| {label} | " + " | ".join(count(lengths[key][q]) for q in ("p50", "p90", "p99", "max")) + " |"
        for key, label in (("prompt", "prompt"), ("chosen", "chosen"), ("rejected", "rejected"),
                           ("prompt_and_longer_answer", "prompt + the longer answer"))]
    return (f"{how}\n\n" + "\n".join(table) + "\n\n"
            f"TRL's `max_length` counts a prompt with its answer: `max_length={keep.get('95%')}` keeps 95% of the rows "
            f"whole, `max_length={keep.get('99%')}` keeps 99%. A shorter one drops or cuts the longer rows "
            "(RewardTrainer drops them).")


def hub_languages(by_language: dict[str, int]) -> list[str]:
    """The Hub's `language` field: each primary language subtag of the rows' BCP-47 codes (`zh-Hant` -> `zh`)."""
    return sorted({code.split("-")[0].lower() for code in by_language if code and code != "unknown"})


def card_markdown(
    *, name: str, version: int, content_hash: str, rows: list[dict[str, Any]], stats: dict[str, Any],
    policy: dict[str, Any], judge_config: dict[str, Any], source_revisions: dict[str, list[str]],
    licenses: list[str], configs: dict[str, list[str]], plot_file: str, simulated: bool = False,
    weights: str | None = None,
) -> str:
    """README.md: YAML front matter (configs and splits, licenses, task categories), then the card. `configs`
    are the exports written ({name: splits}, registry order, as `layout.export_files` returns them)."""
    from huggingface_hub import DatasetCardData

    weights = None if simulated else weights  # the stand-in loads none: SIMULATED says it all
    title = " (SIMULATED verdicts)" if simulated else " (judged by other weights)" if weights else ""
    exports = [EXPORTS[config] for config in configs]
    front = DatasetCardData(
        **license_fields(licenses),
        task_categories=["text-generation"],
        language=hub_languages(stats.get("by_language") or {}) or None,
        size_categories=[size_category(len(rows))],
        tags=[t for e in exports for t in e.hub_tags] + ["preference", "llm-judge", "preference-curator"]
        + (["simulated"] if simulated else []) + (["other-weights"] if weights else []),
        pretty_name=f"{name} v{version}{title}",
        configs=[  # the first export published is the Hub's default config
            {"config_name": config, **({"default": True} if i == 0 else {}),
             "data_files": [{"split": split, "path": f"data/{config}/{split}-*.parquet"} for split in splits]}
            for i, (config, splits) in enumerate(configs.items())
        ],
    )
    margins = [r["margin"] for r in rows]
    confidences = [r["confidence"] for r in rows]
    dropped = stats.get("dropped", {})
    model = judge_config.get("model")
    judged_with = (f"judging with the GenRM stand-in (SIMULATED verdicts, standing in for `{model}`)" if simulated
                   else f"judging with the weights `{weights}` served as `{model}`" if weights
                   else f"judging with `{model}`")
    notice = SIMULATED_NOTICE if simulated else other_weights_notice(weights, model) if weights else ""
    guarantee = guarantee_paragraph(stats.get("certification"))
    how = ("keeping the pairs a certification\naccepts (below)" if guarantee
           else "filtering by how confident\nits ranking is")
    certified = (f"## Certified agreement\n\n{certification_markdown(stats['certification'], stats)}\n\n"
                 if guarantee else "")
    body = f"""# {name} v{version}{title}

{notice + chr(10) + chr(10) if notice else ''}{guarantee + chr(10) + chr(10) if guarantee else ''}Preference pairs (a conversation ending with a user turn, a chosen and a rejected answer) kept from
human-preference sources after {judged_with} and {how}. Content hash `{content_hash}`.

{exports_section(exports, export_settings(policy, rows))}

## Counts

{_counts_section(stats, len(rows))}

By source:

{_table(stats.get('by_source', {}))}

By domain:

{_table(stats.get('by_domain', {}))}

By language:

{_table(stats.get('by_language', {}))}

Dropped, by reason:

{_table(dropped) if dropped else 'nothing dropped'}

## Margin and confidence

![margin and confidence distributions]({plot_file})

| | p10 / p25 / p50 / p75 / p90 |
|---|---|
| margin (0 .. 2.5) | {_quantiles(margins)} |
| confidence (0 .. 1) | {_quantiles(confidences)} |

{certified}## Agreement with human labels

{agreement_markdown(stats.get('human_agreement'))}

## Token lengths

{lengths_markdown(stats.get('lengths'))}

## Calibrated confidence (p_correct)

{calibration_markdown(stats.get('calibration'), stats.get('source_facts'))}

## Bias audit

{bias_markdown(stats.get('bias'), stats.get('pairs_judged'), stats.get('pairs_kept'))}

## Human review

{review_markdown(stats.get('review'), stats.get('calibration'))}

## Cost of judging

{_cost_section(stats.get('cost'))}

## Filter policy

```json
{json.dumps(policy, indent=2, sort_keys=True)}
```

## Judge configuration

```json
{json.dumps(judge_block(judge_config, simulated, weights), indent=2, sort_keys=True, default=str)}
```

## Sources

{_table({s: ", ".join(revs) for s, revs in source_revisions.items()}, header="revisions read")}

Licenses carried from the sources: {'; '.join(licenses)}.
"""
    return "---\n" + front.to_yaml() + "\n---\n\n" + body

