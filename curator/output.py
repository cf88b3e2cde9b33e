"""What the CLI prints on stdout: tables and summaries. In a terminal, rich tables whose cells wrap; anywhere
else (a pipe, a file, a log), plain text with whole rows: no box drawing, no truncation, no wrapping. Numbers
read as everywhere else (`common.numbers`): never a numpy repr."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from common.numbers import plain

# No markup unless a call asks for it (`markup=True`, its text escaped): paths, positions such as `file[train][3]`
# and TOML headers are printed as they are, never taken for style tags and dropped.
# a line is never broken at 80 columns in a pipe or a log (a terminal wraps it at its own width)
err = Console(stderr=True, soft_wrap=True, markup=False)
out = Console(soft_wrap=True, markup=False)


def is_terminal(stream: Any = None) -> bool:
    stream = sys.stdout if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def cell(value: Any) -> str:
    """A value as a table cell or a summary line shows it: nested mappings as `key: value, ...`."""
    value = plain(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"  # counts read alike everywhere: 2,059
    if isinstance(value, dict):
        return ", ".join(f"{k}: {cell(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value) or "-"
    return str(value)


def judge_label(simulated: Any, weights: Any, real: str = "real") -> str:
    """Whose verdicts a version or a judge configuration holds, as every table says it: SIMULATED (the stand-in),
    other weights (named: `tasks/judge/weights.py`), else `real` (or the model's name)."""
    if simulated:
        return "SIMULATED"
    if weights:
        return f"other weights: {weights}"
    return real


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None,
                show_header: bool = True) -> str:
    """Columns padded to their widest cell, two spaces apart, every cell whole."""
    cells = [[cell(v) for v in row] for row in rows]
    shown = [list(headers)] if show_header else []
    widths = [max(len(r[i]) for r in shown + cells) if shown + cells else 0 for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    return "\n".join(([title] if title else []) + [line(r) for r in shown + cells])


def print_table(console: Console, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None,
                show_header: bool = True) -> None:
    if not is_terminal(console.file):
        console.file.write(plain_table(headers, rows, title, show_header) + "\n")
        console.file.flush()
        return
    from rich.table import Table

    table = Table(*headers, title=title, show_header=show_header)
    for column in table.columns:
        column.overflow = "fold"  # a long name or hash wraps inside its cell, never "…"
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    console.print(table, soft_wrap=False)


def print_json(value: Any) -> None:
    """One JSON object on stdout (`--json`): numbers as `common.numbers.jsonable` writes them."""
    import json

    from common.numbers import jsonable

    sys.stdout.write(json.dumps(value, default=jsonable) + "\n")


def print_summary(title: str, summary: dict[str, Any], as_json: bool) -> None:
    """A summary as JSON, or as a two-column table of its keys and values."""
    if as_json:
        print_json(summary)
        return
    print_table(out, ["", ""], [(key, cell(value)) for key, value in summary.items()], title=title, show_header=False)


# The commands by stage, in the order a person meets them: `curate --help` lists them so.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start here", ("demo", "status", "sources")),
    ("1. Ingest", ("ingest", "eval-set", "synth")),
    ("2. Judge", ("judge", "judge-shard", "endpoint-limit", "evaluate-judge", "judge-standin")),
    ("3. Review", ("review",)),
    ("4. Versions and publishing", ("build-version", "versions", "diff", "publish")),
    ("All stages at once", ("run",)),
    ("Dashboard", ("dashboard", "snapshot")),
)


def staged_group():
    """A typer group class that lists its commands by stage, each stage in a panel of its own."""
    from typer.core import TyperGroup

    order = [name for _, names in STAGES for name in names]
    panel = {name: stage for stage, names in STAGES for name in names}

    class StagedGroup(TyperGroup):
        def list_commands(self, ctx):
            names = super().list_commands(ctx)
            for name in names:
                command = self.commands[name]
                command.rich_help_panel = panel.get(name, "Other")
                if not command.short_help and command.help:  # the listing keeps a docstring's line breaks: one line
                    command.short_help = " ".join(command.help.split("\n\n")[0].split())
            return sorted(names, key=lambda n: order.index(n) if n in order else len(order))

    return StagedGroup


def widen_help(min_width: int = 120) -> None:
    """Help is laid out at least `min_width` columns wide (or the terminal's width, when wider): at 80, rich cut
    flag names short ("--max-chosen-longer…"). A TERMINAL_WIDTH the user set wins."""
    import os
    import shutil

    import typer.rich_utils

    if not os.environ.get("TERMINAL_WIDTH"):
        typer.rich_utils.MAX_WIDTH = max(min_width, shutil.get_terminal_size((min_width, 24)).columns)


def agreement_text(agreement: dict[str, Any] | None) -> str:
    """'96.2% of 1,543 (86 human ties, 0 both-bad, 0 judge ties apart)', as the card's table says it."""
    from common.numbers import count, percent

    if not agreement:
        return "-"
    if agreement.get("rate") is None:
        return f"n/a ({count(agreement.get('labelled'))} pairs with a human label, none where both prefer a side)"
    return (f"{percent(agreement['rate'])} of {count(agreement['comparable'])} (human ties "
            f"{count(agreement['human_ties'])}, both-bad {count(agreement['both_bad'])}, judge ties "
            f"{count(agreement['judge_ties'])}: apart)")


def version_lines(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """A version's summary as lines: its figures (`tasks.curate.figures`) in words, the rest under `--json`."""
    from common.numbers import count

    stats = summary.get("stats") or {}
    weights = summary.get("judge_weights") or stats.get("judge_weights")
    lines = [("version", f"{summary.get('name')} v{summary.get('version')}"
              + (" (SIMULATED verdicts)" if summary.get("simulated") or stats.get("simulated") else "")
              + (f" (judged by other weights: {weights})" if weights else ""))]
    if summary.get("note"):
        lines.append(("note", summary["note"]))
    lines.append(("pairs kept", count(summary.get("rows"))))
    if "pairs_judged" in stats:
        not_judged = stats.get("not_judged") or {}
        lines += [("pairs judged", count(stats["pairs_judged"])
                   + (f" ({count(not_judged['pairs'])} not judged: {count(not_judged.get('contaminated', 0))} "
                      "contaminated)" if not_judged.get("pairs") else "")),
                  ("dropped", cell({k: count(v) for k, v in (stats.get("dropped") or {}).items()})),
                  ("agreement with human labels", agreement_text((stats.get("human_agreement") or {}).get("kept"))),
                  ("agreement, judged pool", agreement_text((stats.get("human_agreement") or {}).get("pool")))]
    keep = (stats.get("lengths") or {}).get("max_length_keeping")
    if keep:
        lines.append(("max_length keeping 95% / 99% of rows",
                      f"{count(keep['95%'])} / {count(keep['99%'])} tokens ({stats['lengths']['counted_by']})"))
    if stats.get("splits"):
        lines.append(("splits", cell({k: count(v) for k, v in stats["splits"].items()})))
    for key in ("content_hash", "parent_version", "judge_config_id", "created"):
        if key in summary:
            lines.append((key.replace("_", " "), cell(summary[key])))
    if stats:
        lines.append(("statistics", "calibration, bias audit, cost and more: --json"))
    return lines
