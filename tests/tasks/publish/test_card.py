"""The dataset card: the Hub's license fields, the sources' revisions, and SIMULATED said at the top."""

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
