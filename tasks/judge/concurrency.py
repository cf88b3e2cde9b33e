"""How many requests one endpoint gets at once, found without being told the server's batch size.

A vLLM server runs up to `--max-num-seqs` requests in its batch and queues the rest. A client that sends
too few leaves GPUs idle; one that sends far too many lets requests wait (and time out) in the queue. The
controller keeps a small positive queue: enough that the batch never drains between completions, little
enough that nothing waits long.

- **metrics** (vLLM's Prometheus gauges `vllm:num_requests_running` and `vllm:num_requests_waiting`): while
  nothing waits and every slot we hold is in use, grow by a quarter of what runs plus 8 (so an overshoot
  never queues more than a quarter of the batch and 8); once requests wait, hold the batch plus a queue of
  5% of it (at least one).
- **observed** (no `/metrics`): additive increase while the completion rate grows; back off by 15% when
  latency grows without more completions (requests are queueing, not running). When the gauges answer
  again (a restarted server), back to **metrics**, resuming at the cap the gauges had found.
- **fixed**: `--max-in-flight N` given and no adaptation wanted.

`--max-in-flight` is always a hard upper bound. Pure: the dispatcher feeds it readings and completions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

START = 8  # requests in flight before anything is known: a quarter of the smallest batch plus 8 would allow 12
QUEUE_SHARE = 0.05  # the queue kept waiting, as a share of the running batch
WINDOW_S = 1.0  # observed mode: completions are judged over windows this long

_GAUGE = re.compile(r"^(vllm:num_requests_(?:running|waiting))(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$", re.M)


def parse_vllm_gauges(text: str) -> tuple[float, float] | None:
    """(running, waiting) summed over every model the server serves, or None when the gauges are absent."""
    found: dict[str, float] = {}
    for name, value in _GAUGE.findall(text):
        found[name] = found.get(name, 0.0) + float(value)
    if "vllm:num_requests_running" not in found or "vllm:num_requests_waiting" not in found:
        return None
    return found["vllm:num_requests_running"], found["vllm:num_requests_waiting"]


@dataclass
class Concurrency:
    """One endpoint's concurrency cap and how it was found."""

    hard_cap: int | None = None  # --max-in-flight
    mode: str = "metrics"  # metrics | observed | fixed
    cap: int = START
    peak: int = 0
    full_at: float | None = None  # when requests first waited in the server's queue (the batch was full)
    batch: int = 0  # the most requests seen running while others waited: the server's batch, once known
    readings: int = 0
    # observed mode
    _window_start: float | None = None
    _done: int = 0
    _latency_sum: float = 0.0
    _last_rate: float = 0.0
    _best_latency: float = math.inf
    history: list[tuple[float, int]] = field(default_factory=list)  # (time, cap) at each change
    switches: list[tuple[float, str, int]] = field(default_factory=list)  # (time, mode switched to, cap then)
    _metrics_cap: int | None = None  # the cap the gauges had found when they went away

    def __post_init__(self) -> None:
        if self.mode == "fixed":
            self.cap = self.hard_cap or START
        self.cap = self._bounded(self.cap)
        self.peak = self.cap

    def _bounded(self, cap: int) -> int:
        return max(1, min(cap, self.hard_cap) if self.hard_cap else cap)

    def _set(self, cap: int, now: float) -> None:
        cap = self._bounded(cap)
        if cap != self.cap:
            self.cap = cap
            self.peak = max(self.peak, cap)
            self.history.append((now, cap))

    def on_gauges(self, running: float, waiting: float, in_flight: int, now: float) -> None:
        """A reading of the server's gauges (metrics mode)."""
        if self.mode != "metrics":
            return
        self.readings += 1
        target = max(1, round(QUEUE_SHARE * running))
        if waiting > 0:
            self.full_at = self.full_at if self.full_at is not None else now
            self.batch = max(self.batch, int(running))
        if waiting > target:
            self._set(int(running) + target, now)  # the batch is full at `running`: hold it plus a small queue
        elif in_flight < self.cap - 1:
            return  # we are not using what we have: nothing to learn
        elif waiting == 0 and not self.batch:
            if running < in_flight - max(2, in_flight // 16):
                # Requests of ours the server does not show yet are still on their way (a loaded host): the
                # reading says nothing of the room left, and growing on it would overshoot the batch.
                return
            self._set(self.cap + int(running) // 4 + 8, now)  # room left, batch not found yet: grow
        elif waiting < target and running >= self.batch - 1:
            # The batch is known; a queue this short (a moment between completions) asks for a step, not a leap.
            self._set(self.cap + 1, now)

    def no_metrics(self, now: float) -> None:
        """The server's gauges are gone (never there, or the server went down): watch completions instead."""
        if self.mode == "metrics":
            self._metrics_cap = self.cap
            self.mode = "observed"
            # Throughput seen before belongs to another stretch of the run (perhaps another server process).
            self._window_start, self._done, self._latency_sum = now, 0, 0.0
            self._last_rate, self._best_latency = 0.0, math.inf
            self.switches.append((now, self.mode, self.cap))

    def metrics_back(self, now: float) -> None:
        """The gauges answer again (a restarted server): read them again, from the cap they had found. The
        server may have come back with another batch size, so it is found again: the first reading with a
        queue brings a cap that is too large down to the batch, and one without lets it grow."""
        if self.mode != "observed":
            return
        self.mode = "metrics"
        self.batch = 0
        self._set(max(self.cap, self._metrics_cap or 0), now)
        self.switches.append((now, self.mode, self.cap))

    def on_completion(self, latency: float, in_flight: int, now: float) -> None:
        """A request came back (observed mode judges windows of completions)."""
        if self.mode != "observed":
            return
        if self._window_start is None:
            self._window_start = now
        self._done += 1
        self._latency_sum += latency
        elapsed = now - self._window_start
        if elapsed < WINDOW_S or self._done < 4:
            return
        rate, latency_mean = self._done / elapsed, self._latency_sum / self._done
        self._best_latency = min(self._best_latency, latency_mean)
        if rate >= 1.05 * self._last_rate and in_flight >= self.cap - 1:
            self._set(self.cap + max(2, self.cap // 8), now)  # more completions: more in flight helps
        elif latency_mean >= 1.2 * self._best_latency and rate < 1.05 * self._last_rate:
            self._set(int(self.cap * 0.85), now)  # waiting longer for no more work done: queueing
        self._last_rate = max(rate, 0.9 * self._last_rate)
        self._window_start, self._done, self._latency_sum = now, 0, 0.0

    def resume(self, now: float) -> None:
        """A later dispatch of the same run takes this controller up where the last one left it (the cap and batch
        it found: a later round of a few hundred requests would otherwise spend its life ramping up from START).
        What observed mode counted belongs to the pause before, so its window starts again."""
        if self.mode == "observed":
            self._window_start, self._done, self._latency_sum = now, 0, 0.0

    def report(self, started: float) -> dict[str, object]:
        return {"mode": self.mode, "final": self.cap, "peak": self.peak, "hard_cap": self.hard_cap,
                "batch_full_after_s": None if self.full_at is None else round(self.full_at - started, 3),
                "switches": [{"after_s": round(t - started, 3), "to": mode, "cap": cap}
                             for t, mode, cap in self.switches]}
