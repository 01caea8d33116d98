"""The terminal bar's own columns (rich): the steps done, and the time left from
:class:`fairscan.progress.EtaEstimate` instead of rich's speed over its last 30 s, which jumps
between seconds and hours when replicates finish in bursts a minute apart (issue 36)."""

from __future__ import annotations

from collections.abc import Callable

from rich.progress import ProgressColumn, Task
from rich.text import Text

from fairscan.progress import EtaEstimate


class StepsColumn(ProgressColumn):
    """``400/999`` with a total; ``1,234,567`` (rows read) without; nothing before a step."""

    def render(self, task: Task) -> Text:
        done = int(task.completed)
        if task.total is not None:
            return Text(f"{done}/{int(task.total)}", style="progress.download")
        return Text(f"{done:,}" if done else "", style="progress.download")


class EtaColumn(ProgressColumn):
    """``ETA 0:03:05`` from the task's :class:`EtaEstimate`; ``ETA -:--:--`` before a step;
    nothing for a task without a total (reading, a search)."""

    max_refresh = 1.0  # a countdown by the second, not a flicker

    def __init__(self, estimate: Callable[[], EtaEstimate], clock: Callable[[], float]) -> None:
        self._estimate = estimate
        self._clock = clock
        super().__init__()

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        left = self._estimate().seconds_left(self._clock())
        if left is None:
            return Text("ETA -:--:--", style="progress.remaining")
        minutes, seconds = divmod(round(left), 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"ETA {hours}:{minutes:02d}:{seconds:02d}", style="progress.remaining")
