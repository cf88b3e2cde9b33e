"""Names and street addresses, found by a detector model where one is configured (`CURATE_PII_DETECTOR`).

The scan's own rules (`tasks.ingest.pii`) find what a pattern and a checksum can tell; names and street
addresses need a language model. `CURATE_PII_DETECTOR` names one:

- `presidio`: Presidio's analyzer (`pip install presidio-analyzer` and a spaCy model, e.g. `en_core_web_lg`);
  its PERSON spans are names, its LOCATION spans addresses.
- `gliner` or `gliner:MODEL`: a GLiNER model (`pip install gliner`; default `urchade/gliner_multi_pii-v1`), asked
  for "person" and "street address".
- `MODULE:FUNCTION`: any callable taking a list of texts and returning, per text, (kind, start, end) spans of
  the kinds `MODEL_KINDS`.

The detector reads every text (a name needs no digit, so the scan's gate does not apply) and its spans go where
no rule's finding is. The rules a pair was scanned under name the detector (`rules_of`), so configuring one
makes the backfill scan every pair again; removing it does too. Neither Presidio nor GLiNER can be installed
with its weights here: their adapters are not exercised by the tests, the `MODULE:FUNCTION` seam is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from common.errors import InvalidInputError
from tasks.ingest.pii import MODEL_KINDS, Finding
from warehouse.pii import scan_rules

GLINER_DEFAULT = "urchade/gliner_multi_pii-v1"
_GLINER_LABELS = {"person": "name", "street address": "address"}
_PRESIDIO_ENTITIES = {"PERSON": "name", "LOCATION": "address"}

Detect = Callable[[list[str]], Sequence[Sequence[tuple[str, int, int]]]]


@dataclass(frozen=True)
class Detector:
    spec: str  # as configured: part of the rules each pair was scanned under
    detect: Detect

    def findings(self, texts: list[str]) -> list[list[Finding]]:
        """Per text, the detector's spans as findings; a span of another kind, or outside its text, is refused."""
        out: list[list[Finding]] = []
        spans_per_text = self.detect(texts)
        if len(spans_per_text) != len(texts):
            raise InvalidInputError(f"the detector {self.spec} answered {len(spans_per_text)} texts for {len(texts)}")
        for text, spans in zip(texts, spans_per_text, strict=True):
            found = []
            for kind, start, end in spans:
                if kind not in MODEL_KINDS or not 0 <= start < end <= len(text):
                    raise InvalidInputError(f"the detector {self.spec} gave the span ({kind!r}, {start}, {end}) "
                                            f"for a text of {len(text)} characters: kinds are {', '.join(MODEL_KINDS)}")
                found.append(Finding(kind, int(start), int(end)))
            out.append(found)
        return out


def rules_of(detector: Detector | None) -> str:
    """The rules a pair is scanned under: the scan's own (`RULES`), and the detector's name where one runs."""
    return scan_rules(None if detector is None else detector.spec)


def configured_detector() -> Detector | None:
    """The detector the settings name (`pii_detector`), loaded once per process; None when none is."""
    from common.settings import get_settings

    spec = get_settings().pii_detector
    return load_detector(spec) if spec else None


@lru_cache(maxsize=4)
def load_detector(spec: str) -> Detector:
    """The detector `spec` names; one line saying what to install when its library is missing."""
    name, _, arg = spec.partition(":")
    try:
        if name == "presidio" and not arg:
            return Detector(spec, _presidio())
        if name == "gliner":
            return Detector(spec, _gliner(arg or GLINER_DEFAULT))
        if arg:
            detect = getattr(importlib.import_module(name), arg, None)
            if not callable(detect):
                raise InvalidInputError(f"CURATE_PII_DETECTOR={spec}: {name} has no function {arg}")
            return Detector(spec, detect)
    except ImportError as err:
        raise InvalidInputError(f"CURATE_PII_DETECTOR={spec} cannot be loaded: {err} (install its extra: "
                                "presidio-analyzer with a spaCy model, or gliner)") from None
    raise InvalidInputError(f"CURATE_PII_DETECTOR={spec!r}: one of presidio, gliner[:MODEL], MODULE:FUNCTION")


def _presidio() -> Detect:
    from presidio_analyzer import AnalyzerEngine

    engine = AnalyzerEngine()

    def detect(texts: list[str]) -> list[list[tuple[str, int, int]]]:
        return [[(_PRESIDIO_ENTITIES[r.entity_type], r.start, r.end)
                 for r in engine.analyze(text=t, entities=list(_PRESIDIO_ENTITIES), language="en")] for t in texts]

    return detect


def _gliner(model: str) -> Detect:
    from gliner import GLiNER

    loaded = GLiNER.from_pretrained(model)

    def detect(texts: list[str]) -> list[list[tuple[str, int, int]]]:
        return [[(_GLINER_LABELS[e["label"]], e["start"], e["end"])
                 for e in loaded.predict_entities(t, list(_GLINER_LABELS), threshold=0.5)] for t in texts]

    return detect
