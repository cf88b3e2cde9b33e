"""What a source says about its rows and labels, as the warehouse stores it beside its pairs (`source_facts`).

A pair's source is a name; what its label means (the scale, from which |label| it is a clear preference,
whether people or a model gave it, whether its pairs name the models that wrote them) is recorded with the
source at every ingest and read back from the warehouse by the calibration, human reviews, the bias audit and
the card. A later run that does not know the source (a deployment, another host, a warehouse written by another
build) so reads the pairs as they were meant.

The *meaning* (`MEANING`) is what reading the labels depends on: an ingest that would change it for a source
already in the warehouse is refused. Its license, description and declaration are descriptive: a change updates
them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from common.errors import InvalidInputError

if TYPE_CHECKING:
    from warehouse.sources import SourceFactsStore

# |human_label| from which a preference counts as clear on a source that declares nothing else (one step of
# the scale: an arena vote, a "slightly better"), and for a pair whose source nobody stated facts for.
DEFAULT_CLEAR_LABEL = 1.0

# The facts that say how the labels read: a change of any of them is a change of what the pairs mean.
MEANING = ("clear_label", "names_models", "human_labels", "label_meaning")

# Where a reader's facts of a source come from (`SourceFacts.origin`).
FROM_SOURCE = "source"  # the `Source` of this build, as an ingest records it
FROM_WAREHOUSE = "warehouse"  # stored with the pairs
FROM_BUILD = "this build"  # the warehouse holds none (older than its `source_facts`), this build knows the name
ASSUMED = "assumed"  # nobody stated any: the defaults (one step of the scale is clear)


def default_label_meaning(clear_label: float) -> dict[str, Any]:
    """What a source that states nothing else means by its labels: the canonical scale (docs/data-model.md)."""
    return {"scale": "-3..3 from response A's side", "direction": "positive: response A preferred",
            "tie": 0, "clear": f"|label| >= {clear_label:g}"}


@dataclass(frozen=True)
class SourceFacts:
    name: str
    clear_label: float = DEFAULT_CLEAR_LABEL  # |human_label| from which a preference is clear
    names_models: bool = False  # its pairs name the models under `schemas.pair.MODEL_A` / `MODEL_B`
    human_labels: bool = True  # its labels were given by people (not a model's ratings)
    license: str = ""
    description: str = ""
    label_meaning: dict[str, Any] = field(default_factory=dict)  # JSON: scale, direction, clear rule, ties, ...
    declaration: dict[str, Any] | None = None  # JSON: a declared source's declaration as read; None built in
    origin: str = FROM_SOURCE  # where these facts were read from (not stored)

    def __post_init__(self) -> None:
        self.to_json()  # facts that cannot be stored are refused where they are made, before an ingest writes

    def to_json(self) -> str:
        """The stored form: every fact but `origin`, keys sorted. A fact that is not JSON is refused here."""
        data = {k: v for k, v in asdict(self).items() if k != "origin"}
        try:
            return json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise InvalidInputError(f"the facts of source {self.name!r} are not JSON: {err}") from None

    @classmethod
    def from_json(cls, text: str, origin: str = FROM_WAREHOUSE) -> SourceFacts:
        data = json.loads(text)
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "origin"}
        return cls(**known, origin=origin)

    def meaning(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in MEANING}

    def meaning_digest(self) -> str:
        """blake2b of the meaning's canonical JSON: equal digests, equal meaning."""
        text = json.dumps(self.meaning(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def assumed(name: str) -> SourceFacts:
    """The facts of a source nobody stated any for: today's defaults, said to be assumed."""
    return SourceFacts(name, label_meaning=default_label_meaning(DEFAULT_CLEAR_LABEL), origin=ASSUMED)


def facts_in(facts: Mapping[str, SourceFacts], name: str) -> SourceFacts:
    """`name`'s facts from a loaded set; the assumed defaults when it holds none."""
    found = facts.get(name)
    return found if found is not None else assumed(name)


def resolve(stored: Mapping[str, SourceFacts], known: Mapping[str, SourceFacts],
            names: Iterable[str]) -> dict[str, SourceFacts]:
    """Every stored source's facts, and for each of `names` the warehouse holds none for: this build's (`known`),
    else the assumed defaults."""
    out = dict(stored)
    for name in names:
        if name not in out:
            out[name] = replace(known[name], origin=FROM_BUILD) if name in known else assumed(name)
    return out


def _said(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def differences(old: SourceFacts, new: SourceFacts, keys: Iterable[str]) -> list[str]:
    """`key old -> new` for each of `keys` that differs; a dict fact (label_meaning) key by key."""
    out = []
    for key in keys:
        a, b = getattr(old, key), getattr(new, key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{k} {_said(a.get(k))} -> {_said(b.get(k))}" for k in sorted(set(a) | set(b))
                    if a.get(k) != b.get(k)]
        else:
            out.append(f"{key} {_said(a)} -> {_said(b)}")
    return out


class SourceMeaningChangedError(InvalidInputError):
    """An ingest whose source means something else by its labels than the pairs of that source already stored."""

    hint = ("the pairs already stored keep the meaning they were landed with: ingest the new data under another "
            "source name, or into another warehouse")


def meaning_changed(old: SourceFacts, new: SourceFacts) -> SourceMeaningChangedError | None:
    """The refusal of an ingest of `new` over a warehouse whose pairs of that source were landed under `old`
    (None when the meaning is the same): one line naming what differs, stored value first."""
    changed = differences(old, new, MEANING)
    if not changed:
        return None
    return SourceMeaningChangedError(
        f"source {new.name!r} means something else by its labels than the pairs of it already in the warehouse "
        f"(stored -> now): {'; '.join(changed)}; nothing was written")


def described_changes(old: SourceFacts, new: SourceFacts) -> list[str]:
    """What an ingest updates of a source's descriptive facts (license, description, declaration)."""
    return differences(old, new, ("license", "description", "declaration"))


def stored_facts(store: SourceFactsStore, known: Mapping[str, SourceFacts]) -> dict[str, SourceFacts]:
    """What every reader of a warehouse reads a source's labels by: each source's facts as the warehouse stores
    them, and for a source of its pairs it stores none for (a warehouse older than its `source_facts`, read
    without migrating it) `known`'s (this build's registry), else the assumed defaults."""
    found = {name: SourceFacts.from_json(row["facts"]) for name, row in store.source_facts().items()}
    return resolve(found, known, store.pair_sources())


def facts_changes(store: SourceFactsStore, facts: SourceFacts) -> list[str]:
    """What recording `facts` would update of the stored ones, in words ([] when nothing). A change of meaning for
    a source with pairs in the warehouse is refused (`SourceMeaningChangedError`); one for a source without pairs
    (its earlier runs landed none) replaces the old meaning. Reads only: an ingest asks before it writes anything."""
    row = store.source_facts().get(facts.name)
    if row is None:
        return []
    old = SourceFacts.from_json(row["facts"])
    notes = []
    refused = meaning_changed(old, facts)
    if refused is not None:
        if store.has_pairs(facts.name):
            raise refused
        notes.append(f"meaning replaced (no pair of {facts.name!r} was stored under the old one): "
                     + "; ".join(differences(old, facts, MEANING)))
    return notes + [f"updated {change}" for change in described_changes(old, facts)]


def record_facts(store: SourceFactsStore, facts: SourceFacts, run_id: str) -> list[str]:
    """Record the facts an ingest run reads its source with, once per run (again: nothing changes but the time);
    what it updated, as `facts_changes` says, which refuses a changed meaning before anything is written."""
    notes = facts_changes(store, facts)
    store.record_source_facts(facts.name, facts.to_json(), facts.meaning_digest(), run_id)
    return notes
