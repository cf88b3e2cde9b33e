"""Every reason the pipeline gives, one name each with a line saying what it means, grouped by stage: why a row
is quarantined at ingest, why a judgment failed, why a row or a file of the judge exchange is rejected, why a
benchmark row is not judged, why a reviewer's annotation does not count, and why a judged pair is not in a dataset
version. `catalog()` lists them all (for the docs and the dashboard); `lookup` and `meaning` say what a reason found
in the warehouse means.

Each member is the reason as stored (a `str`: it compares, hashes, formats and serializes as its text). A reason
with a variable part is a template, its variable parts written `<what>`, filled in order by `.of(...)`:
`JudgeFailure.HTTP_STATUS.of(503) == "http_503"`. A schema check is stored after the column it failed on,
`<column>:<check>` (`column_reason`), except a check of the whole row, stored alone (`responses_differ`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_PLACEHOLDER = re.compile(r"<[A-Za-z_]+>")


class Reasons(StrEnum):
    """A group of reasons: each member is the reason as stored, with its one-line meaning."""

    meaning: str

    def __new__(cls, value: str, meaning: str) -> Reasons:
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    @property
    def is_template(self) -> bool:
        return _PLACEHOLDER.search(self.value) is not None

    @property
    def prefix(self) -> str:
        """The text every reason of this kind starts with (all of it, unless a template)."""
        return _PLACEHOLDER.split(self.value, 1)[0]

    def of(self, *parts: object) -> str:
        """The reason with its `<...>` parts filled by `parts`, in order."""
        holes = _PLACEHOLDER.findall(self.value)
        if len(holes) != len(parts):
            raise ValueError(f"{self.value} has {len(holes)} variable parts, given {len(parts)}")
        pieces = iter(str(p) for p in parts)
        return _PLACEHOLDER.sub(lambda _: next(pieces), self.value)

    def matches(self, reason: str) -> bool:
        """Whether `reason` is this one (a template: with any variable parts)."""
        if not self.is_template:
            return reason == self.value
        pattern = "".join(".+" if _PLACEHOLDER.fullmatch(piece) else re.escape(piece)
                          for piece in re.split(f"({_PLACEHOLDER.pattern})", self.value) if piece)
        return re.fullmatch(pattern, reason, re.DOTALL) is not None


# ---------------------------------------------------------------- ingest: the `quarantine` table's reasons


class ReadFault(Reasons):
    """Stage `read`: a line or element of a file that is no row at all."""

    MALFORMED_JSON = "malformed_json", "the line is not JSON"
    NOT_AN_OBJECT = "not_an_object", "the line is JSON but not an object"
    JSON_TOO_DEEP = "json_too_deep", "the JSON nests deeper than the readers and the storage can hold"
    ROW_TOO_LARGE = ("row_too_large(<=<bytes> bytes)", "the row is over CURATE_MAX_ROW_BYTES, more than the judge "
                     "could ever read; its first bytes kept")


class ValueFault(Reasons):
    """Stage `raw`, before the source's schema: a value no column check can see, named by its top-level field."""

    INVALID_UTF8 = "invalid_utf8:<field>", "a value under the field holds a lone surrogate (no UTF-8 for it)"
    NOT_FINITE = "not_finite:<field>", "a value under the field is NaN or Infinity"
    JSON_TOO_DEEP = "json_too_deep", "a value nests deeper than 64 levels"


class SchemaCheck(Reasons):
    """Stages `raw` (the source's pandera schema) and `pair` (the canonical pair's): the check a column failed,
    stored as `<column>:<check>`; `responses_differ` checks the whole row and is stored alone."""

    MISSING = "missing", "the column is absent from the row or null"
    IS_TEXT = "is_text", "the value is not a string"
    IS_LIST = "is_list", "the value is not a list"
    IS_TEXT_LIST = "is_text_list", "the value is not a list of strings"
    IS_MESSAGE_LIST = "is_message_list", "the value is not a list of {role, content} messages of the source's shape"
    IS_INT = "is_int", "the value is not an integer (an integral float counts)"
    IN_RANGE = "in_range(<low>,<high>)", "the number is outside the range"
    IN = "in(<values>)", "the value is none of the values allowed (separated by |)"
    NOT_EMPTY = "not_empty", "the text or list is empty (zero-width characters, BOMs and NULs removed)"
    ENDS_WITH_USER_TURN = "ends_with_user_turn", "the history does not end with a user turn"
    ROLES_ALLOWED = "roles_allowed", "a role other than user or assistant, or a system message not in front"
    LAST_USER_TURN_NOT_EMPTY = "last_user_turn_not_empty", "the history's last user turn is empty"
    VALID_UTF8 = "valid_utf8", "a text of the pair cannot be encoded as UTF-8"
    FITS_JUDGE_CONTEXT = ("fits_judge_context(<=<bytes> bytes)",
                          "the pair's text is larger than any tokenizer could fit in the judge's input budget")
    RESPONSES_DIFFER = "responses_differ", "the two responses are the same text (checked on the whole row)"
    # declared sources (tasks/ingest/declared/formats)
    IS_ID = "is_id", "the value is no id: neither a non-empty text nor an integer"
    IS_TEXT_OR_MESSAGE_LIST = ("is_text_or_message_list",
                               "the value is neither a text nor a list of {role, content} messages with text content")
    ENDS_WITH_ASSISTANT_TURN = "ends_with_assistant_turn", "the message list does not end with an assistant turn"
    ASSISTANT_TURNS_ONLY = "assistant_turns_only", "a response's message list holds a turn that is not the assistant's"


class AdapterRejection(Reasons):
    """Stage `adapter`: a source's mapping of a valid raw row to a canonical pair refused it."""

    NON_TEXT_CONTENT = "non_text_content:<type>", "a message holds a part that is not text (an image, ...)"
    MESSAGE_MISSING = "message_missing", "a message of the conversation is missing or not an object"
    FULL_CONVERSATION_MALFORMED = "full_conversation_malformed", "a turn of the session's full conversation is no object"
    CONVERSATION_EMPTY = "conversation_empty", "a side's conversation is empty, or too short for its last turn"
    CONVERSATION_NOT_ENDING_WITH_ANSWER = ("conversation_not_ending_with_answer",
                                           "a side's conversation does not end with an assistant answer")
    MULTI_TURN_DIVERGENT_HISTORY = ("multi_turn_divergent_history",
                                    "the two sides differ before their final answers (multi-turn rule: strict)")
    COMPLETION_NOT_AN_OBJECT = "completion_not_an_object", "a completion of the row is not an object"
    COMPLETION_RESPONSE_EMPTY = "completion_response_empty", "a completion's answer is empty"
    COMPLETION_SCORE_INVALID = "completion_score_invalid:<score>", "a completion's score is missing or no finite number"
    COMPLETION_SCORE_OUT_OF_RANGE = ("completion_score_out_of_range:<score>",
                                     "a completion's score is outside its scale")
    COMPLETION_NOT_FINITE = ("completion_not_finite:<field>",
                             "a value under the completion's field (a score, a rating) is NaN or Infinity")
    COMPLETIONS_OVER_CAP = ("completions_over_cap(<=<n>)", "the row has more completions than "
                            "CURATE_MAX_COMPLETIONS_PER_ROW: the first n are paired, the rest left out")
    FEWER_THAN_TWO_COMPLETIONS = "fewer_than_two_completions", "fewer than two usable completions: no pair to make"
    NO_CLEAR_PREFERENCE = "no_clear_preference", "no completion leads another by the pairing threshold"
    # declared sources (tasks/ingest/declared/formats)
    NO_COMMON_PROMPT = "no_common_prompt", "chosen and rejected share no leading message or text: no implicit prompt"
    RESPONSE_NOT_ONE_ASSISTANT_TURN = ("response_not_one_assistant_turn",
                                       "after the shared prompt, a side is not one final assistant turn")
    TRANSCRIPT_MALFORMED = ("transcript_malformed",
                            "the text is no transcript of \\n\\nHuman: / \\n\\nAssistant: turns starting with a Human turn")
    LABEL_OUTSIDE_DECLARED_SCALE = ("label_outside_declared_scale",
                                    "the row's label is none of the values its declaration lists")
    ADAPTER_MADE_NOTHING = "adapter_made_nothing", "the adapter returned neither a pair nor a rejection for the row"
    ADAPTER_ERROR = "adapter_error:<Exception>", "the adapter raised this exception on the row (a bug to report)"


# ---------------------------------------------------------------- judge: `judgments.failure_reason`


class JudgeFailure(Reasons):
    """Why a judgment has no verdict. Final (never sent again as it is): over_budget, too_long, too_large."""

    OVER_BUDGET = "over_budget", "the prompt has more tokens than the judge's input budget; not sent"
    TOO_LONG = "too_long", "the server said the prompt does not fit its context"
    TIMEOUT = "timeout", "no whole reply within the request time-out"
    CONNECTION_ERROR = "connection_error", "the endpoint could not be reached, or the connection broke"
    HTTP_STATUS = "http_<code>", "the server answered with this HTTP error status"
    CLIENT_ERROR = "client_error:<Exception>", "sending the request failed with this exception"
    TOO_LARGE = "too_large", "the reply body is over the size cap; read no further"
    BAD_RESPONSE_NOT_JSON = "bad_response:not_json", "the reply body is not JSON"
    BAD_RESPONSE_UNREADABLE = "bad_response:unreadable", "the reply could not be read (an error no rule foresaw)"
    BAD_RESPONSE = "bad_response:<field>", "the reply's field (body, choices, message, content, usage, ...) is malformed"
    EMPTY = "empty", "the answer and its reasoning are both empty"
    TRUNCATED = "truncated", "the answer was cut off at max_tokens before a verdict"
    NO_ANSWER_AFTER_REASONING = "no_answer_after_reasoning", "the reasoning never ended (no </think>): no answer"
    NO_JSON = "no_json", "the answer holds no verdict JSON object"
    NOT_A_NUMBER = "not_a_number", "a score or the ranking of the verdict is not a number"
    OUT_OF_RANGE = "out_of_range", "a score is outside 1-5 or the ranking outside 1-6"
    UNKNOWN = "unknown", "a failed judgment that recorded no reason"


class ExchangeReject(Reasons):
    """Why a judgment row a worker wrote to the judge exchange is not merged (`exchange_rejects`)."""

    NOT_PLANNED = "not_planned", "the pair is not in the shard's plan"
    WRONG_CONFIG = "wrong_config", "the row's judge configuration is not the plan's"
    UNPLANNED_SLOT = "unplanned_slot", "an order or sample the plan's strategy does not ask for"
    WRONG_RUN = "wrong_run", "the row names another run than its file"
    BAD_COUNTS = "bad_counts", "attempts or requests are not counts in range"
    BAD_FAILURE = "bad_failure", "a failed row without a reason, or with verdict fields"
    BAD_STATUS = "bad_status", "a status other than ok or failed"
    BAD_VERDICT = "bad_verdict", "an ok row whose verdict is out of range or disagrees with its A-side fields"


class ExchangeFileFault(Reasons):
    """Why a file of the judge exchange is moved aside to `quarantine/` unmerged (`exchange_quarantine`, and the
    `.reason` file beside it). Each is a sentence: the code it starts with, then its detail."""

    BAD_NAME = "not a result file name (<expected>)", "the result file's name is not one a worker writes: it names no run"
    UNSIGNED = ("no valid signature for its plan (<setting>)",
                "the exchange is keyed and the result file carries no valid signature for its plan")
    NO_PLAN = ("no plan <plan> <shard> in the exchange to check it against",
               "the result file's shard has no readable work file in the exchange")
    PLAN_UNTRUSTED = ("its plan <plan> <shard> is not trusted (<problem>)",
                      "the exchange is keyed and the file's plan has no manifest, or one unsigned, changed or signed "
                      "with another key")
    UNREADABLE = ("unreadable as judgments (<Exception>: <message>)",
                  "the result file is truncated, not Parquet, or not judgments")
    REWRITTEN = ("rewritten after it was merged (<rule>)",
                 "the result file changed after its merge; its new rows are not merged")
    RUN_RECORD_NOT_JSON = "run record is not JSON (<error>)", "the run record is not JSON"
    RUN_RECORD_UNSIGNED = ("run record: no valid signature for its plan (<setting>)",
                           "the exchange is keyed and the run record carries no valid signature for its plan")
    RUN_RECORD_MISPLACED = ("run record: not where its worker writes it (<problem>)",
                            "a run record named after another run or lying in another shard's folder: a copy")
    RUN_RECORD_CONFLICT = ("run record: disagrees with run <run> as recorded (<field>)",
                           "the run record contradicts the same run already in judge_runs: a copy that was changed")
    # last: its template matches any run record's reason
    RUN_RECORD_INVALID = ("run record: <problem>",
                          "the run record is no valid record: a field missing or mistyped, an unknown status or strategy")


# ---------------------------------------------------------------- judge evaluation: a benchmark's rows left out


class BenchmarkRejection(Reasons):
    """Why a benchmark row read by `evaluate-judge` is not judged (the result's `rejected`, with its position)."""

    NOT_A_COMPARISON = ("not_a_comparison:<Exception>",
                        "the row cannot be made into comparisons (a field missing or mistyped, an unknown label)")


# ---------------------------------------------------------------- review: a Label Studio annotation that does not count


class ReviewReject(Reasons):
    """Why an annotation pulled from Label Studio is not a review (`curate review pull`'s `rejected`), or why a
    review landed earlier is withdrawn (`human_reviews.withdrawn_reason`): kept, counted for nothing."""

    SKIPPED = "skipped", "the reviewer skipped the task (Label Studio's was_cancelled): not a review"
    NO_CHOICE = "no_choice", "the annotation holds no choice of the interface's preference control"
    CHOICE_UNKNOWN = "choice_unknown", "the choice is none the interface offers, or several where it offers one"
    ANNOTATION_MALFORMED = ("annotation_malformed",
                            "a field of the annotation (id, result, value, times) has no valid shape")
    ANNOTATOR_UNKNOWN = "annotator_unknown", "Label Studio records no user who posted it (a deleted user, or an import)"
    TASK_NOT_PUSHED = "task_not_pushed", "its task is not one this warehouse pushed to the project (left alone)"
    TASK_TEXTS_CHANGED = "task_texts_changed", "its task no longer shows the texts it was pushed with (edited there)"
    TASK_DELETED = "task_deleted", "its task was deleted in Label Studio"
    ANNOTATION_DELETED = "annotation_deleted", "the annotation was deleted in Label Studio"


# ---------------------------------------------------------------- curate: why a judged pair is not in a version


class Dropped(Reasons):
    """Why a pair is not in a version; checked in this order, a pair counts under the first it meets (in a
    certified version, both_bad and human_tie come after not_certified: no label chooses what is certified)."""

    NOT_JUDGED = "not_judged", "no verdict under the version's judge configuration"
    CONTAMINATED = "contaminated", "its prompt overlaps an evaluation prompt"
    PERSONAL_DATA = "personal_data", "its texts hold personal data or secrets of a kind the policy drops (policy pii)"
    BOTH_BAD = "both_bad", "the source flags both answers as bad (policy both_bad: drop)"
    HUMAN_TIE = "human_tie", "the human label is a tie (policy human_ties: drop)"
    JUDGE_TIE = "judge_tie", "the judge ranks neither answer above the other"
    MARGIN_BELOW_MIN = "margin_below_min", "the judge's margin is below min_abs_margin"
    CONFIDENCE_BELOW_MIN = "confidence_below_min", "the confidence is below min_confidence"
    P_CORRECT_BELOW_MIN = "p_correct_below_min", "the calibrated probability is below min_p_correct, or missing"
    ONE_ORDER_ONLY = "one_order_only", "judged in one order only, with a strategy that never asks the other"
    SECOND_ORDER_FAILED = "second_order_failed", "the judgment in the other order failed"
    SECOND_ORDER_MISSING = "second_order_missing", "the other order is not judged yet"
    ONE_ORDER_DECISIVE = "one_order_decisive", "judged in one order only (policy one_order_decisive: drop)"
    ORDERS_DISAGREE = "orders_disagree", "the two orders' verdicts point different ways"
    SCORES_DISAGREE = "scores_disagree", "the individual scores point against the ranking"
    SPREAD_ABOVE_MAX = "spread_above_max", "the verdicts' spread is above max_spread"
    NOT_COVERED = "not_covered", "no trusted label or review audit speaks for the pair's source (a certified version)"
    NOT_CERTIFIED = "not_certified", "outside the threshold certified at target_agreement (a certified version)"
    HUMAN_DISAGREES = "human_disagrees", "the human label disagrees with the judge (policy: require_agreement)"
    REVIEWED_TIE = "reviewed_tie", "the reviewers' majority is a tie"
    REVIEWED_BOTH_BAD = "reviewed_both_bad", "the reviewers' majority found both answers bad"
    REVIEWED_SPLIT = "reviewed_split", "the reviewers reached no majority"


# ---------------------------------------------------------------- listing and looking up


@dataclass(frozen=True)
class Group:
    reasons: type[Reasons]
    stage: str  # ingest, judge, review, curate
    where: str  # where the reason is stored or given


GROUPS: tuple[Group, ...] = (
    Group(ReadFault, "ingest", "quarantine, stage read"),
    Group(ValueFault, "ingest", "quarantine, stage raw"),
    Group(SchemaCheck, "ingest", "quarantine, stages raw and pair, as <column>:<check>"),
    Group(AdapterRejection, "ingest", "quarantine, stage adapter"),
    Group(JudgeFailure, "judge", "judgments.failure_reason"),
    Group(ExchangeReject, "judge", "exchange_rejects.reason"),
    Group(ExchangeFileFault, "judge", "exchange_quarantine.reason, and beside the file moved to quarantine/"),
    Group(BenchmarkRejection, "judge", "evaluate-judge's rejected rows, the error's message as their detail"),
    Group(ReviewReject, "review", "review pull's rejected annotations; human_reviews.withdrawn_reason"),
    Group(Dropped, "curate", "a version's dropped counts"),
)


@dataclass(frozen=True)
class ReasonInfo:
    stage: str
    where: str
    constant: str  # e.g. JudgeFailure.TOO_LONG
    reason: str  # as stored; a template with its <variable parts>
    meaning: str


def catalog() -> list[ReasonInfo]:
    """Every reason, in pipeline order, with its meaning."""
    return [ReasonInfo(g.stage, g.where, f"{g.reasons.__name__}.{m.name}",
                       f"<column>:{m.value}" if g.reasons is SchemaCheck and m is not SchemaCheck.RESPONSES_DIFFER
                       else m.value, m.meaning)
            for g in GROUPS for m in g.reasons]


def column_reason(column: str, check: str) -> str:
    """The stored reason of a column that failed a schema check."""
    return f"{column}:{check}"


def lookup(reason: str, group: type[Reasons] | None = None) -> Reasons | None:
    """The registered reason `reason` is (exact before template, then `<column>:<check>`), or None."""
    groups = [g.reasons for g in GROUPS if group is None or g.reasons is group]
    for members in ([m for g in groups for m in g if not m.is_template], [m for g in groups for m in g if m.is_template]):
        for member in members:
            if member.matches(reason):
                return member
    column, sep, check = reason.partition(":")
    if sep and column and SchemaCheck in groups:
        return lookup(check, SchemaCheck)
    return None


def meaning(reason: str) -> str | None:
    """What a stored reason means, or None for one not registered."""
    member = lookup(reason)
    return member.meaning if member is not None else None
