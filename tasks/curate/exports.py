"""A version's rows in the formats people train with, each format one small class that declares its contract.

An export declares its `name` (the Hub config and the folder `data/<name>/`), the stored columns its records
read (`needs_columns`), the records it makes of a version's rows, their Arrow `schema`, what the dataset card
says of it (the `load_dataset` line and a note), the policy keys that change its files, and whether a version
publishes it by default. `EXPORTS` lists them: the file layout, the card and the publisher loop over it and never
name an export, so a new format is one class here, added to `EXPORTS`.

- `dpo`: TRL's conversational preference format: `prompt` (the history as messages), `chosen` and
  `rejected` (one assistant message each).
- `rm`: reward-model pairs: `chosen` and `rejected` as whole conversations (history + answer).
- `helpsteer3`: HelpSteer3-style rows: `context`, `response1`, `response2` in the pair's own order (so
  position says nothing about the label) and `overall_preference` from the judge (-3..3, negative means
  response1 is better).
- `kto` (off by default): TRL's unpaired conversational format for KTO: two rows per pair, `prompt`,
  `completion` (one assistant message) and `label` (true for the chosen answer, false for the rejected).
Every format carries `judge_margin` (the judge's mean margin for the chosen answer, 0..2.5; negative where
human reviewers overrode the judge), `confidence` (the heuristic), `p_correct` (calibrated; null when too few
labelled pairs), `pair_id`, `source`, `domain` and `language`. None carries a column named `margin` unless
asked: TRL's RewardTrainer adds such a column to its loss (`-logsigmoid(r_chosen - r_rejected - margin)`), so
the rm export writes it only under the policy's `rm_margin_column`.

A version holding rows that reviewers decided (`reviewed_rows`: the stored `reviewers` column is set on some)
carries three columns more in every format, after the common ones: `reviewed` (bool), `reviewers_choice` (the
side of the pair the reviewers' majority chose, "a" or "b"; null on the judge's rows) and `reviewers` (how many
voted; 0 on the judge's rows). A reviewed row's `confidence` and `p_correct` are null there: they are the
judge's certainty, and the row's side is the reviewers'. A version without reviewed rows has none of these
columns, so its files are byte for byte what they were before the columns existed. No trainer of TRL reads a
column of these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pyarrow as pa

from common.errors import InvalidInputError
from tasks.judge.genrm import MAX_MARGIN

Row = dict[str, Any]
Policy = Mapping[str, Any]
NO_POLICY: Policy = {}

MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
# What every format carries after its own columns, and the stored columns they come from.
COMMON_FIELDS = (pa.field("judge_margin", pa.float64()), pa.field("confidence", pa.float64()),
                 pa.field("p_correct", pa.float64()), pa.field("pair_id", pa.string()),
                 pa.field("source", pa.string()), pa.field("domain", pa.string()), pa.field("language", pa.string()))
COMMON_COLUMNS = ("margin", "confidence", "p_correct", "pair_id", "source", "domain", "language")
PAIR_COLUMNS = ("prompt", "chosen", "rejected")
# The columns of a version with rows reviewers decided (`reviewed_rows`), after the common ones, and the stored
# columns they come from (read only then: a version stored before them has no such rows).
REVIEWED_ROWS = "reviewed_rows"
REVIEW_FIELDS = (pa.field("reviewed", pa.bool_()), pa.field("reviewers_choice", pa.string()),
                 pa.field("reviewers", pa.int64()))
REVIEW_COLUMNS = ("reviewers", "reviewers_choice")
# A certified version's rows carry the score that certified them (`certified_rows`), after the common ones: a model's
# probability that the judge matches a person, not the judge's own p_correct (its features: the card's
# certification section). A version without it has no such column.
CERTIFIED_ROWS = "certified_rows"
CERTIFIED_FIELDS = (pa.field("certification_score", pa.float64()),)


def common_fields(policy: Policy = NO_POLICY) -> tuple[pa.Field, ...]:
    """What every format carries after its own columns: the review columns too in a version with reviewed rows."""
    return (COMMON_FIELDS + (REVIEW_FIELDS if policy.get(REVIEWED_ROWS) else ())
            + (CERTIFIED_FIELDS if policy.get(CERTIFIED_ROWS) else ()))


def _common(row: Row, policy: Policy = NO_POLICY) -> Row:
    out = _judge_and_review(row, policy)
    if policy.get(CERTIFIED_ROWS):
        out["certification_score"] = row.get("certification_score")
    return out


def _judge_and_review(row: Row, policy: Policy = NO_POLICY) -> Row:
    if not policy.get(REVIEWED_ROWS):
        return {"judge_margin": row["margin"], "confidence": row["confidence"], "p_correct": row.get("p_correct"),
                "pair_id": row["pair_id"],
                "source": row["source"], "domain": row["domain"], "language": row["language"]}
    reviewed = bool(row["reviewers"])
    # the judge's certainty says nothing of a side reviewers chose: null rather than a figure against them
    return {"judge_margin": row["margin"], "confidence": None if reviewed else row["confidence"],
            "p_correct": None if reviewed else row.get("p_correct"), "pair_id": row["pair_id"],
            "source": row["source"], "domain": row["domain"], "language": row["language"],
            "reviewed": reviewed, "reviewers_choice": row["reviewers_choice"] if reviewed else None,
            "reviewers": int(row["reviewers"] or 0)}


def export_settings(policy: Policy | None, rows: list[Row]) -> Policy:
    """What the exports of a version's `rows` are written under: its policy, and whether reviewers decided any
    row (`reviewed_rows`: the review columns, and the reviewed rows' judge figures null)."""
    policy = dict(policy or NO_POLICY)
    if any(r.get("reviewers") for r in rows):
        policy[REVIEWED_ROWS] = True
    if any(r.get("certification_score") is not None for r in rows):
        policy[CERTIFIED_ROWS] = True
    return policy


def _messages(prompt: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in prompt]


class UnknownExportError(InvalidInputError):
    """A policy names an export this build does not have."""


class ExportContractError(RuntimeError):
    """An export's records do not match the schema it declares (a bug in the export, not in the data)."""


class Export:
    """One published format. A subclass sets the class attributes and writes `fields` and `record` (one
    stored row -> one record), or `records` when its rows are not one per pair."""

    name: ClassVar[str]
    default: ClassVar[bool] = True  # published unless the policy's `exports` names the formats
    needs_columns: ClassVar[tuple[str, ...]] = PAIR_COLUMNS + COMMON_COLUMNS  # stored columns its records read
    policy_keys: ClassVar[tuple[str, ...]] = ()  # policy keys that change its files (part of the content hash)
    hub_tags: ClassVar[tuple[str, ...]] = ()  # the card's front-matter tags it brings
    card_variable: ClassVar[str]  # the card's load_dataset example: `<variable> = load_dataset(..., "<name>")`
    card_summary: ClassVar[str]  # ... and its comment

    def fields(self, policy: Policy = NO_POLICY) -> list[pa.Field]:
        raise NotImplementedError

    def schema(self, policy: Policy = NO_POLICY) -> pa.Schema:
        return pa.schema(self.fields(policy))

    def record(self, row: Row, policy: Policy = NO_POLICY) -> Row:
        raise NotImplementedError(f"{self.name} is not one record per pair: use records()")

    def records(self, rows: list[Row], policy: Policy = NO_POLICY) -> list[Row]:
        return [self.record(r, policy) for r in rows]

    def table(self, records: list[Row], policy: Policy = NO_POLICY) -> pa.Table:
        """The records as Arrow under the declared schema: a column that is null in every record keeps its
        type, and a record with other columns than declared is refused (Arrow would drop or fill them)."""
        schema = self.schema(policy)
        names = set(schema.names)
        if any(r.keys() != names for r in records):
            odd = next(r for r in records if r.keys() != names)
            raise ExportContractError(f"export {self.name!r} made a record with columns {sorted(odd)}, "
                                      f"but declares {schema.names}")
        return pa.Table.from_pylist(records, schema=schema)

    def card_note(self, policy: Policy = NO_POLICY) -> str | None:
        """A paragraph the card gives this format below the load_dataset examples, if any."""
        return None


class Dpo(Export):
    name = "dpo"
    hub_tags = ("dpo",)
    card_variable, card_summary = "dpo", "TRL conversational DPO format"

    def fields(self, policy: Policy = NO_POLICY) -> list[pa.Field]:
        return [pa.field("prompt", MESSAGES), pa.field("chosen", MESSAGES), pa.field("rejected", MESSAGES),
                *common_fields(policy)]

    def record(self, row: Row, policy: Policy = NO_POLICY) -> Row:
        return dpo_record(row, policy)


class RewardModel(Export):
    name = "rm"
    policy_keys = ("rm_margin_column",)
    hub_tags = ("reward-modeling",)
    card_variable, card_summary = "rm", "reward-model pairs"

    def fields(self, policy: Policy = NO_POLICY) -> list[pa.Field]:
        trl_margin = [pa.field("margin", pa.float64())] if policy.get("rm_margin_column") else []
        return [pa.field("chosen", MESSAGES), pa.field("rejected", MESSAGES), *common_fields(policy), *trl_margin]

    def record(self, row: Row, policy: Policy = NO_POLICY) -> Row:
        return rm_record(row, trl_margin=bool(policy.get("rm_margin_column")), policy=policy)

    def card_note(self, policy: Policy = NO_POLICY) -> str:
        if policy.get("rm_margin_column"):
            return ("The `rm` config has a `margin` column on purpose (policy `rm_margin_column`): TRL's RewardTrainer "
                    "adds it to its loss, `-logsigmoid(r_chosen - r_rejected - margin)`, so the reward model is asked "
                    "to separate pairs by at least the judge's margin.")
        return ("No config has a column named `margin`: TRL's RewardTrainer would add it to its loss "
                "(`-logsigmoid(r_chosen - r_rejected - margin)`). The judge's margin is `judge_margin`; the `rm` "
                "config trains with the plain Bradley-Terry loss.")


class HelpSteer3(Export):
    name = "helpsteer3"
    needs_columns = PAIR_COLUMNS + ("chosen_side",) + COMMON_COLUMNS
    card_variable, card_summary = "hs3", "HelpSteer3-style rows"

    def fields(self, policy: Policy = NO_POLICY) -> list[pa.Field]:
        return [pa.field("context", MESSAGES), pa.field("response1", pa.string()), pa.field("response2", pa.string()),
                pa.field("overall_preference", pa.int64()), *common_fields(policy)]

    def record(self, row: Row, policy: Policy = NO_POLICY) -> Row:
        return helpsteer3_record(row, policy)


class Kto(Export):
    name = "kto"
    default = False  # a new config in the published layout: only when the policy's `exports` asks for it
    hub_tags = ("kto",)
    card_variable, card_summary = "kto", "TRL unpaired KTO format"

    def fields(self, policy: Policy = NO_POLICY) -> list[pa.Field]:
        return [pa.field("prompt", MESSAGES), pa.field("completion", MESSAGES), pa.field("label", pa.bool_()),
                *common_fields(policy)]

    def records(self, rows: list[Row], policy: Policy = NO_POLICY) -> list[Row]:
        # each pair gives one desirable and one undesirable row, so the two labels stay balanced
        return [{"prompt": _messages(row["prompt"]), "completion": [{"role": "assistant", "content": row[side]}],
                 "label": side == "chosen", **_common(row, policy)} for row in rows for side in ("chosen", "rejected")]

    def card_note(self, policy: Policy = NO_POLICY) -> str:
        return ("The `kto` config is unpaired, as TRL's KTOTrainer reads it: two rows per pair, `prompt`, "
                "`completion` and `label` (`true` for the chosen answer, `false` for the rejected), both carrying "
                "the pair's `pair_id` and the judge's columns.")


def dpo_record(row: Row, policy: Policy = NO_POLICY) -> Row:
    return {"prompt": _messages(row["prompt"]),
            "chosen": [{"role": "assistant", "content": row["chosen"]}],
            "rejected": [{"role": "assistant", "content": row["rejected"]}],
            **_common(row, policy)}


def rm_record(row: Row, trl_margin: bool = False, policy: Policy = NO_POLICY) -> Row:
    prompt = _messages(row["prompt"])
    return {"chosen": prompt + [{"role": "assistant", "content": row["chosen"]}],
            "rejected": prompt + [{"role": "assistant", "content": row["rejected"]}],
            # a margin TRL subtracts is never negative (a row whose reviewers overrode the judge has a negative one)
            **_common(row, policy), **({"margin": max(row["margin"], 0.0)} if trl_margin else {})}


def helpsteer3_record(row: Row, policy: Policy = NO_POLICY) -> Row:
    strength = max(1, min(3, round(row["margin"] / MAX_MARGIN * 3)))
    a_chosen = row["chosen_side"] == "a"
    return {"context": _messages(row["prompt"]),
            "response1": row["chosen"] if a_chosen else row["rejected"],
            "response2": row["rejected"] if a_chosen else row["chosen"],
            "overall_preference": -strength if a_chosen else strength,
            **_common(row, policy)}


# The registry, in the order the layout writes them and the card lists them (the first is the Hub's default).
EXPORTS: dict[str, Export] = {e.name: e for e in (Dpo(), RewardModel(), HelpSteer3(), Kto())}
DEFAULT_EXPORTS = tuple(name for name, e in EXPORTS.items() if e.default)
# Policy keys that change the published files but not which pairs a version holds.
EXPORT_POLICY_KEYS = ("exports", *sorted({k for e in EXPORTS.values() for k in e.policy_keys}))


def check_export_names(names: list[str] | tuple[str, ...]) -> None:
    """Refuse names no export has, naming those there are (for a policy's `exports`)."""
    if not names:
        raise UnknownExportError(f"a version publishes at least one export: the exports are {', '.join(EXPORTS)}")
    unknown = sorted(set(names) - EXPORTS.keys())
    if unknown:
        raise UnknownExportError(f"unknown export(s) {', '.join(unknown)}: the exports are {', '.join(EXPORTS)}")


def selected_exports(policy: Policy | None = None) -> list[Export]:
    """The exports a version publishes, in registry order: those its policy's `exports` names, else those on
    by default."""
    names = (policy or NO_POLICY).get("exports")
    if names is None:
        return [EXPORTS[n] for n in DEFAULT_EXPORTS]
    check_export_names(names)
    return [e for e in EXPORTS.values() if e.name in names]


def export_options(policy: Policy | None = None) -> dict[str, Any]:
    """The policy's choices that change the published files but not the rows (part of a version's content
    hash): the selected exports' policy keys that are set, and the selection when it is not the default one.
    Empty under the defaults, so a default version's hash is its rows' alone."""
    policy = policy or NO_POLICY
    chosen = selected_exports(policy)
    options = {k: policy[k] for e in chosen for k in e.policy_keys if policy.get(k)}
    if tuple(e.name for e in chosen) != DEFAULT_EXPORTS:
        options["exports"] = [e.name for e in chosen]
    return options


def missing_columns(export: Export, columns: set[str] | Mapping[str, Any]) -> list[str]:
    """The stored columns `export` reads that the rows lack."""
    return [c for c in export.needs_columns if c not in columns]


def export_record(config: str, row: Row, policy: Policy | None = None) -> Row:
    """One row in export `config`, as the version's policy asks."""
    return EXPORTS[config].record(row, policy or NO_POLICY)
