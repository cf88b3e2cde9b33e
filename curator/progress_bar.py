"""A progress bar on stderr for the commands that judge or ingest at length, fed by `common.progress.report`; off
in a pipe, a file or with `--json`."""

from __future__ import annotations

import sys
from typing import Any

from curator.output import err


def _rate_column():
    """Items per second."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task):
            return Text(f"{task.speed:,.1f}/s" if task.speed else "-/s")

    return RateColumn()


class ProgressBar:
    """A rich progress bar while the block runs, when stderr is a terminal and the command prints no JSON."""

    def __init__(self, as_json: bool = False):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        enabled = not as_json and sys.stderr.isatty()
        self.progress = (
            Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _rate_column(),
                     TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=False)
            if enabled else None
        )
        self.task = None

    def __enter__(self) -> ProgressBar:
        from common import progress

        if self.progress is not None:
            self.progress.start()
            progress.set_reporter(self.update)
        return self

    def update(self, advance: int, total: int | None, label: str) -> None:
        if self.task is None:
            self.task = self.progress.add_task(label, total=total)
        self.progress.update(self.task, advance=advance, total=total)

    def __exit__(self, *exc: Any) -> None:
        from common import progress

        progress.set_reporter(None)
        if self.progress is not None:
            self.progress.stop()
