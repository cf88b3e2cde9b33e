"""The bias audit's shares and the controls that hold them (pure functions)."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.curate.bias import Preferences, audit, hold_share, markdown_marks, model_family


def test_markdown_marks_count_headers_list_items_and_bold():
    text = "# Title\n\nSome **bold** text.\n\n- one\n- two\n1. first\nplain line with a - dash"
    assert markdown_marks(text) == 5
    assert markdown_marks("no markdown at all, 2 * 3 = 6") == 0


def test_model_families():
    assert model_family("gpt-4o-2024-08-06") == "gpt"
    assert model_family("claude-3-5-sonnet-20241022") == "claude"
    assert model_family("Llama-3.1-70B-Instruct") == "llama"
    assert model_family(None) is None


def test_audit_shares_and_family_win_rates():
    prefs = Preferences.of([
        ("long answer here", "short", "a", "gpt-4o", "claude-3"),
        ("long answer here", "short", "b", "gpt-4o-mini", "claude-3-opus"),
        ("x", "much longer rejected", "a", "claude-3", "gpt-4"),
        ("- a\n- b", "plain", "b", "llama-3", "llama-3.1"),  # same family: no game
        ("same", "size", "a", None, "gpt-4"),  # one side unknown: no game
    ])
    a = audit(prefs)
    assert a["pairs"] == 5 and a["chosen_longer_share"] == 0.6  # the first, second and fourth
    assert a["chosen_more_markdown_share"] == 0.2 and a["chosen_first_share"] == 0.6
    assert a["length_ratio"] == {"p10": 0.05, "p50": 1.4, "p90": 3.2}
    assert a["model_families"]["gpt"] == {"pairs": 3, "wins": 2, "win_rate": round(2 / 3, 4)}
    assert a["model_families"]["claude"] == {"pairs": 3, "wins": 1, "win_rate": round(1 / 3, 4)}
    assert "llama" not in a["model_families"]
    assert audit(Preferences.of([]))["chosen_longer_share"] is None


@pytest.mark.parametrize("cap", [0.3, 0.5, 0.55, 0.9, 1.0])
def test_hold_share_drops_exactly_enough_of_the_least_confident_flagged_items(cap):
    items = [(i, i % 3 != 0, (i * 37 % 100) / 100) for i in range(300)]  # (id, flagged, confidence)
    keep = hold_share(np.array([x[1] for x in items]), cap, np.array([x[2] for x in items]))
    kept = [x for x, k in zip(items, keep) if k]
    gone = len(items) - len(kept)
    flagged = [x for x in kept if x[1]]
    assert len(flagged) / len(kept) <= cap + 1e-9
    assert len(kept) == 300 - gone
    if gone:  # one fewer drop would break the cap: no more than needed
        assert (len(flagged) + 1) / (len(kept) + 1) > cap
        dropped = [x for x in items if x not in kept]
        assert all(x[1] for x in dropped)
        assert max(x[2] for x in dropped) <= min(x[2] for x in flagged)
    assert [x[0] for x in kept] == sorted(x[0] for x in kept)  # original order
