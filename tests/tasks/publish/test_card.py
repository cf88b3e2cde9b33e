"""The dataset card: the Hub's license fields, the sources' revisions, SIMULATED said at the top, and each
published export's own section (its load_dataset line, its note, its tags)."""

from __future__ import annotations

import yaml

from tasks.publish.card import card_markdown, license_fields

ROWS = [{"margin": 2.0, "confidence": 0.8}]


def _card(**kw):
    args = dict(name="prefs", version=3, content_hash="abc123", rows=ROWS, stats={"considered": 5},
                policy={}, judge_config={"model": "nvidia/Qwen3-Nemotron-235B-A22B-GenRM"},
                source_revisions={"helpsteer3": ["file:aaa", "file:bbb"]}, licenses=["helpsteer3: cc-by-4.0"],
                configs={"dpo": ["train"]}, plot_file="plot.svg")
    return card_markdown(**{**args, **kw})


def test_a_real_judges_card_names_the_model_and_no_simulation():
    card = _card()
    assert "SIMULATED" not in card and "judging with `nvidia/Qwen3-Nemotron-235B-A22B-GenRM`" in card
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["license"] == "cc-by-4.0" and "license_details" not in front


def test_a_simulated_card_says_so_in_its_title_front_matter_and_first_paragraph():
    card = _card(simulated=True)
    front = yaml.safe_load(card.split("---\n")[1])
    body = card.split("---\n", 2)[2]
    assert front["pretty_name"] == "prefs v3 (SIMULATED verdicts)" and "simulated" in front["tags"]
    assert body.lstrip().startswith("# prefs v3 (SIMULATED verdicts)")
    assert body.index("SIMULATED VERDICTS") < body.index("Preference pairs")


def test_mixed_licenses_use_the_hubs_other_fields_and_sources_show_revisions():
    licenses = ["arena: cc-by-4.0 (prompts); model outputs under their providers' terms", "helpsteer3: cc-by-4.0"]
    assert license_fields(licenses) == {"license": "other", "license_name": "per-source-licenses",
                                        "license_link": "LICENSE.md"}
    card = _card(licenses=licenses)
    front = yaml.safe_load(card.split("---\n")[1])
    assert (front["license"], front["license_link"]) == ("other", "LICENSE.md") and "license_details" not in front
    assert "| | revisions read |" in card and "| helpsteer3 | file:aaa, file:bbb |" in card


STATS = {
    "pairs_judged": 2705, "pairs_kept": 2059, "not_judged": {"pairs": 31, "contaminated": 31},
    "dropped": {"margin_below_min": 400, "judge_tie": 246}, "splits": {"train": 1950, "validation": 109},
    "by_language": {"en": 2000, "zh-Hant": 50, "unknown": 9},
    "human_agreement": {
        "pool": {"labelled": 2705, "comparable": 2300, "agree": 2054, "disagree": 246, "human_ties": 250,
                 "both_bad": 60, "judge_ties": 95, "rate": 0.893},
        "kept": {"labelled": 2059, "comparable": 1892, "agree": 1763, "disagree": 129, "human_ties": 167,
                 "both_bad": 0, "judge_ties": 0, "rate": 0.9318}},
    "lengths": {"rows": 2059, "counted_by": "estimate",
                **{k: {"p50": 700, "p90": 1200, "p99": 1800, "max": 3000}
                   for k in ("prompt", "chosen", "rejected", "prompt_and_longer_answer")},
                "max_length_keeping": {"95%": 2917, "99%": 3679}},
}


def test_the_card_states_the_versions_figures_once_each():
    card = _card(stats=STATS, rows=ROWS * 2059)
    assert "2,059 pairs kept of 2,705 pairs judged (the judged pool); 646 dropped" in card
    assert "31 pairs of the warehouse were not judged (31 of them contaminated" in card
    assert "| agreement | 89.3% | 93.2% |" in card  # ties and both-bad apart: 1,763 of 1,892, not of 2,059
    assert "| human ties (not counted) | 250 | 167 |" in card and "1,763 / 1,892" in card
    assert "2736" not in card and "85.6%" not in card


def test_the_card_gives_token_lengths_and_the_max_length_for_trl():
    card = _card(stats=STATS, rows=ROWS * 2059)
    section = card.split("## Token lengths", 1)[1].split("##", 1)[0]
    assert "Estimated, not counted with the judge's tokenizer" in section
    assert "| prompt | 700 | 1,200 | 1,800 | 3,000 |" in section
    assert "`max_length=2917` keeps 95% of the rows" in section and "`max_length=3679` keeps 99%" in section


def test_hub_fields_language_and_size_categories():
    front = yaml.safe_load(_card(stats=STATS, rows=ROWS * 2059).split("---\n")[1])
    assert front["language"] == ["en", "zh"] and front["size_categories"] == ["1K<n<10K"]


def test_a_simulated_cards_judge_block_names_the_stand_in_not_the_model():
    card = _card(simulated=True, judge_config={"model": "nvidia/Qwen3-Nemotron-235B-A22B-GenRM", "simulated": True})
    block = yaml.safe_load(card.split("## Judge configuration", 1)[1].split("```json", 1)[1].split("```", 1)[0])
    assert "stand-in" in block["model"] and "SIMULATED" in block["model"]
    assert block["stands_in_for"] == "nvidia/Qwen3-Nemotron-235B-A22B-GenRM" and block["simulated"] is True
    real = _card(judge_config={"model": "nvidia/Qwen3-Nemotron-235B-A22B-GenRM"})
    assert '"model": "nvidia/Qwen3-Nemotron-235B-A22B-GenRM"' in real and "stands_in_for" not in real



def _judge_block(card: str) -> dict:
    return yaml.safe_load(card.split("## Judge configuration", 1)[1].split("```json", 1)[1].split("```", 1)[0])


def test_a_card_of_other_weights_names_them_at_the_top_and_in_its_judge_block():
    model, tiny = "nvidia/Qwen3-Nemotron-235B-A22B-GenRM", "/work/tiny-genrm/tiny-genrm-6c1f"
    card = _card(weights=tiny, judge_config={"model": model, "weights": tiny})
    front = yaml.safe_load(card.split("---\n")[1])
    body = card.split("---\n", 2)[2]
    assert front["pretty_name"] == "prefs v3 (judged by other weights)" and "other-weights" in front["tags"]
    assert body.lstrip().startswith("# prefs v3 (judged by other weights)")
    assert body.index(f"loaded `{tiny}`, not the published weights of `{model}`") < body.index("Preference pairs")
    assert f"judging with the weights `{tiny}` served as `{model}`" in body
    assert f"judging with `{model}`" not in body  # the model is never named as the judge alone
    block = _judge_block(card)
    assert block["weights"] == tiny and block["served_as"] == model and tiny in block["model"]
    real = _judge_block(_card(judge_config={"model": model, "weights": None}))
    assert real == {"model": model}  # the published weights: the block as it always was
    # the stand-in loads no weights: SIMULATED says it, once
    simulated = _card(simulated=True, weights=tiny, judge_config={"model": model, "simulated": True})
    assert "OTHER WEIGHTS" not in simulated and "SIMULATED VERDICTS" in simulated


DEFAULT_CONFIGS = {"dpo": ["train", "validation"], "rm": ["train", "validation"], "helpsteer3": ["train", "validation"]}
# The card's usage block for the default exports, as every published card has carried it.
USAGE = '''```python
from datasets import load_dataset
dpo = load_dataset("<this repo or folder>", "dpo")          # TRL conversational DPO format
rm = load_dataset("<this repo or folder>", "rm")            # reward-model pairs
hs3 = load_dataset("<this repo or folder>", "helpsteer3")   # HelpSteer3-style rows
```

No config has a column named `margin`: TRL's RewardTrainer would add it to its loss (`-logsigmoid(r_chosen - r_rejected - margin)`). The judge's margin is `judge_margin`; the `rm` config trains with the plain Bradley-Terry loss.

## Counts'''


def test_the_usage_block_is_the_published_exports_own_sections():
    card = _card(configs=DEFAULT_CONFIGS)
    assert USAGE in card
    on_purpose = _card(configs=DEFAULT_CONFIGS, policy={"rm_margin_column": True})
    assert "The `rm` config has a `margin` column on purpose (policy `rm_margin_column`)" in on_purpose
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["tags"] == ["dpo", "reward-modeling", "preference", "llm-judge", "preference-curator"]
    assert [(c["config_name"], c.get("default")) for c in front["configs"]] == [
        ("dpo", True), ("rm", None), ("helpsteer3", None)]
    assert front["configs"][2]["data_files"] == [{"split": s, "path": f"data/helpsteer3/{s}-*.parquet"}
                                                 for s in ("train", "validation")]


def test_a_card_shows_only_the_exports_published():
    card = _card(configs={"helpsteer3": ["train"]})
    usage = card.split("```python", 1)[1].split("```", 1)[0]
    assert usage.strip().splitlines()[1:] == [
        'hs3 = load_dataset("<this repo or folder>", "helpsteer3")   # HelpSteer3-style rows']
    assert "RewardTrainer" not in card  # rm's note comes with rm
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["tags"] == ["preference", "llm-judge", "preference-curator"] and front["configs"][0]["default"] is True


CALIBRATION = {"status": "fitted", "method": "logistic regression", "labelled": 900, "ece": 0.02, "brier": 0.2,
               "bins": [], "by_domain": {}}
SOURCE_FACTS = {
    "helpsteer3": {"pairs": 1000, "labelled": 1000, "human_labels": True, "clear_label": 2.0, "facts": "warehouse"},
    "ultrafeedback": {"pairs": 400, "labelled": 400, "human_labels": False, "clear_label": 1.0, "facts": "warehouse"},
    "unlabelled-src": {"pairs": 50, "labelled": 0, "human_labels": True, "clear_label": 1.0, "facts": "warehouse"},
    "another-build-s": {"pairs": 30, "labelled": 30, "human_labels": True, "clear_label": 1.0, "facts": "assumed"},
}


def test_the_card_says_which_sources_carried_human_labels_as_their_stored_facts_say():
    card = _card(stats={**STATS, "calibration": CALIBRATION, "source_facts": SOURCE_FACTS}, rows=ROWS * 2059)
    section = card.split("## Calibrated confidence (p_correct)")[1].split("\n## ")[0]
    assert ("Human labels came from helpsteer3 (1,000 labelled pairs, clear from |label| 2); another-build-s (30 "
            "labelled pairs; no facts stored with its pairs: read by the defaults") in section
    assert ("Labels given by a model, not people, counted alike: ultrafeedback (400 labelled pairs, clear from "
            "|label| 1).") in section
    assert "No labels: unlabelled-src." in section and "HelpSteer3 |overall_preference|" not in section
    too_few = _card(stats={**STATS, "calibration": {"status": "too_few_labelled", "note": "n"},
                           "source_facts": SOURCE_FACTS})
    assert "Human labels came from helpsteer3" in too_few


def test_a_version_built_before_the_facts_travelled_keeps_its_card_text():
    """Its stats hold no `source_facts`: the calibration paragraph is the one it was published with."""
    card = _card(stats={**STATS, "calibration": CALIBRATION}, rows=ROWS * 2059)
    assert "(HelpSteer3 |overall_preference| >= 2; arena votes that are neither ties nor both-bad). Each labelled " \
           "pair's probability comes from a model that never saw its label" in card
    assert "Human labels came from" not in card
