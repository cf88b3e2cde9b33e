"""What a judge kind declares: how one judgment is asked of its server and read back, what a slot is for it, how
its server is probed before anything is sent, and which fields of the judge configuration make its identity.

Every kind gives its verdict on the canonical pair the same way: a margin for answer A on the kind's own scale (a
GenRM's from +2.5 to -2.5; a reward model's the difference of its two raw scores), beside its own payload (the
GenRM's scores and ranking; the reward model's two scores). The dispatcher, the planner and the warehouse read a
kind only through these members, so a new kind is one module here and its line in `KINDS` (`__init__.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, runtime_checkable

if TYPE_CHECKING:
    from tasks.judge.preflight import TemplateProbe
    from warehouse.judging import PairText

Slot = tuple[str, int]  # (order, sample index); a kind without an order names its one slot itself


class Reading(NamedTuple):
    """What a reply body says: a verdict (`verdict` as the server gave it, `side` on answer A's side with its
    `margin`) or a failure with its reason, and what is stored beside it."""

    status: str  # ok | failed
    verdict: Any = None
    side: Any = None
    failure_reason: str | None = None
    error: str | None = None
    raw_text: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    served_model: str | None = None


@runtime_checkable
class JudgeKind(Protocol):
    """One kind of judge and the server API it is called on."""

    name: ClassVar[str]  # its identity in the judge configuration (`JudgeConfig.kind`) and in summaries
    path: ClassVar[str]  # the endpoint a judgment is asked on, from the server's root
    said: ClassVar[str]  # how a person names it: "the GenRM", "the reward model"
    # The fields of the judge configuration its verdicts depend on (the rest, another kind's, are left out of its id)
    identity: ClassVar[tuple[str, ...]]

    def slots(self, samples: int = 1) -> list[Slot]:
        """What a pair's judgments are for it: the GenRM's (order, sample) in both orders; a reward model's one
        slot, each answer scored once, with no order."""
        ...

    def messages(self, history: list[dict[str, str]], response_a: str, response_b: str,
                 slot: Slot) -> tuple[list[dict[str, str]], Any]:
        """The messages a judgment of `slot` sends (what its prompt is counted on), and anything else the request
        carries (`JudgeRequest.payload`)."""
        ...

    async def count_tokens(self, http: Any, url: str, model: str, messages: list[dict[str, str]],
                           payload: Any) -> tuple[int, list[int] | None]:
        """A judgment's prompt tokens as its server counts them (the longest sequence it sends), and their ids
        where they are one sequence."""
        ...

    async def send(self, endpoint: Any, config: Any, messages: list[dict[str, str]], payload: Any,
                   seed: int | None) -> bytes:
        """Ask the server (`endpoint`: the client's, with `.client`, `.http` and `.url`); the reply's body."""
        ...

    def read(self, body: Any, slot: Slot) -> Reading:
        """A parsed JSON reply as a verdict on the canonical pair, or a failure saying what was wrong."""
        ...

    def probe(self, url: str, model: str, timeout: float) -> TemplateProbe:
        """The preflight's probe of a server: its chat template renders what this kind needs."""
        ...


def kind_pair_messages(pair: PairText, kind: JudgeKind, slot: Slot) -> tuple[list[dict[str, str]], Any]:
    """`kind.messages` of a stored pair."""
    return kind.messages(pair.history, pair.response_a, pair.response_b, slot)
