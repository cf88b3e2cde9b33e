"""Label roles fixed when judging, and attempts accounted for: pure rules over arrays."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.curate.label_roles import (
    CertificationHistory,
    LabelRolesError,
    attempt_of,
    role_conflict,
    spent_risk,
    trained_by_rounds,
)
from tasks.curate.policy import make_policy


def test_the_attempts_together_spend_at_most_the_risk():
    shares = [spent_risk(0.05, k) for k in range(1, 100_001)]
    assert shares == sorted(shares, reverse=True) and sum(shares) < 0.05
    assert sum(shares) > 0.05 * 0.9999  # and nearly all of it, over enough attempts


def test_the_same_attempt_keeps_its_number_and_another_is_the_next():
    policy = make_policy({"target_agreement": 0.9})
    first = attempt_of("cfg", policy, "source", "d1", CertificationHistory())
    history = CertificationHistory(attempts=[first])
    assert attempt_of("cfg", policy, "source", "d1", history)["attempt"] == 1
    other_target = attempt_of("cfg", make_policy({"target_agreement": 0.95}), "source", "d1", history)
    new_labels = attempt_of("cfg", policy, "source", "d2", history)
    other_share = attempt_of("cfg", make_policy({"target_agreement": 0.9, "calibration_share": 0.6}), "source", "d1",
                             history)
    assert other_target["attempt"] == new_labels["attempt"] == other_share["attempt"] == 2
    assert other_target["risk_spent"] == pytest.approx(0.05 * 6 / (np.pi ** 2 * 4))


def test_a_label_that_trained_the_rounds_never_calibrates():
    ids = np.array([f"p{i}" for i in range(6)], dtype=object)
    calibrating = np.array([1, 1, 0, 0, 0, 0], bool)
    training = np.array([1, -1, 1, 0, -1, 1], np.int8)
    trained = trained_by_rounds(ids, calibrating, training)
    assert trained == ["p2", "p4", "p5"]
    roles = {"kind": "source", "calibration_share": 0.5, "min_audit_reviews": 200}
    history = CertificationHistory(frozenset(trained), roles)
    same = make_policy({"target_agreement": 0.9})
    assert role_conflict(ids, calibrating, same, "source", history) is None
    wider = np.array([1, 1, 1, 0, 0, 0], bool)  # a larger calibration share takes p2 in
    refused = role_conflict(ids, wider, make_policy({"target_agreement": 0.9, "calibration_share": 0.7}), "source",
                            history)
    assert isinstance(refused, LabelRolesError) and "calibration_share = 0.7" in str(refused)
    audit = role_conflict(ids, np.array([0, 0, 0, 0, 1, 1], bool), make_policy({"target_agreement": 0.9}), "audit",
                          history)
    assert audit is not None and "min_audit_reviews" in str(audit) and "2 calibration labels" in str(audit)
