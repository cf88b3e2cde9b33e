"""Label roles fixed when judging, and certification attempts accounted for (docs/certification.md).

- **Roles.** Judging in rounds escalates by reading the *training* labels. A pair whose label trained a round may
  never calibrate a version built on those verdicts: `role_conflict` finds such pairs and names the key that turned
  them into calibration labels, and the build is refused.
- **Attempts.** Every distinct certification attempt on a judge configuration's labels (another target, risk, key
  or set of calibration labels) is recorded. The k-th is tested at `spent_risk(risk, k)` = risk · 6 / (π² k²), so
  the attempts together spend at most the stated risk (Σ 1/k² = π²/6): the chance that any of them certified a
  false statement is at most the risk a card states, however many attempts came before. The same attempt made
  again is the same attempt (the same outcome), and costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.errors import UserError

# the policy keys that decide which labels calibrate, and so what an attempt is
ATTEMPT_KEYS = ("calibration_share", "min_audit_reviews", "min_audit_reviewers", "audit_votes", "judge_like_labels",
                "sources", "mixture")


class LabelRolesError(UserError, ValueError):
    """A build would calibrate on labels that trained the rounds."""

    hint = ("build with the keys the rounds were judged by, or judge under a new configuration; docs/certification.md "
            "says why a label that steered the rounds cannot certify them")


@dataclass(frozen=True)
class CertificationHistory:
    """What the warehouse remembers of a judge configuration's certifications: the pairs whose label trained its
    rounds, the label roles its first round recorded, and the attempts made on its labels."""

    trained: frozenset[str] = frozenset()
    roles: dict[str, Any] | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)


def spent_risk(risk: float, attempt: int) -> float:
    """The risk the `attempt`-th attempt (1, 2, ...) is tested at: its share of `risk`, 6 / (π² k²)."""
    return risk * 6.0 / (math.pi ** 2 * attempt ** 2)


def labels_digest(pair_ids: np.ndarray, calibrating: np.ndarray, direction: np.ndarray) -> str:
    """blake2b of the calibration pairs and their labels, in pair id order."""
    h = hashlib.blake2b(digest_size=16)
    for pair, d in zip(pair_ids[calibrating].tolist(), direction[calibrating].tolist()):
        h.update(f"{pair}\0{d}\n".encode())
    return h.hexdigest()


def attempt_of(config_id: str, policy: Any, kind: str, digest: str, history: CertificationHistory) -> dict[str, Any]:
    """This attempt's record: its number among the configuration's attempts (the same attempt keeps its number) and
    the risk it is tested at. `certified` is filled in once it is tested."""
    keys = {k: getattr(policy, k) for k in ATTEMPT_KEYS}
    key = hashlib.blake2b(json.dumps([policy.target_agreement, policy.risk, keys, kind, digest],
                                     sort_keys=True).encode(), digest_size=16).hexdigest()
    earlier = next((a for a in history.attempts if a["attempt_key"] == key), None)
    number = earlier["attempt"] if earlier else len(history.attempts) + 1
    return {"config_id": config_id, "attempt_key": key, "attempt": number, "labels_kind": kind,
            "labels_digest": digest, "target": policy.target_agreement, "risk": policy.risk,
            "risk_spent": spent_risk(policy.risk, number), "keys": keys, "certified": False}


def trained_by_rounds(pair_ids: np.ndarray, calibrating: np.ndarray, training: np.ndarray) -> list[str]:
    """The pairs whose label a round's escalation reads (a training label of a pair that does not calibrate)."""
    return pair_ids[~calibrating & (training != 0)].tolist()


def role_conflict(pair_ids: np.ndarray, calibrating: np.ndarray, policy: Any, kind: str,
                  history: CertificationHistory) -> LabelRolesError | None:
    """The refusal of a build whose calibration pairs include labels that trained the rounds, naming the key that
    moved them (None: no such pair)."""
    if not history.trained or not calibrating.any():
        return None
    moved = [p for p in pair_ids[calibrating].tolist() if p in history.trained]
    if not moved:
        return None
    roles = history.roles or {}
    if roles.get("kind") == "source" and kind in ("audit", "mixed"):
        key = f"min_audit_reviews = {policy.min_audit_reviews} (the review audit now calibrates; its labels trained " \
              "the rounds)"
    elif roles and policy.calibration_share != roles.get("calibration_share"):
        key = f"calibration_share = {policy.calibration_share:g} (the rounds were judged with " \
              f"{roles['calibration_share']:g})"
    elif policy.judge_like_labels == "trust":
        key = "judge_like_labels = \"trust\" (the rounds trained on the labels it now trusts to calibrate)"
    else:
        key = "the policy's label keys"
    return LabelRolesError(f"{len(moved):,} calibration labels of this build trained the rounds that judged these pairs: "
                           f"{key}")
