"""The one failure policy of the deliveries (fairscan.run.delivery): each runs on its own, a
failure becomes a located error saying the reports are written, an interrupt stops the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from fairscan.errors import DataError, FairscanError
from fairscan.run.delivery import KEPT, deliver

REPORT: Any = object()  # the probes below never read it


@dataclass
class Probe:
    field: str
    failure: BaseException | None = None
    seen: list[str] = field(default_factory=list)

    def deliver(self, report: object) -> object:
        self.seen.append(self.field)
        if self.failure is not None:
            raise self.failure
        return f"{self.field} done"


def test_a_failing_delivery_stops_none_of_the_others() -> None:
    first = Probe("output.history", DataError("locked", field="output.history", hint="wait"))
    second = Probe("output.mlflow", OSError(28, "No space left on device"))
    third = Probe("GITHUB_STEP_SUMMARY")
    delivered = deliver(REPORT, [first, second, third])
    assert [p.seen for p in (first, second, third)] == [[p.field] for p in (first, second, third)]
    assert delivered.results == {"GITHUB_STEP_SUMMARY": "GITHUB_STEP_SUMMARY done"}
    [history, mlflow] = delivered.errors
    assert history.issues[0].hint == f"wait; {KEPT}" and history.kind == "data"
    assert mlflow.issues[0].field == "output.mlflow"
    assert "No space left on device" in mlflow.issues[0].message
    assert mlflow.issues[0].hint == KEPT


def test_errors_are_located_by_the_caller() -> None:
    failing = Probe("output.history", DataError("locked", field="output.history"))

    def locate(error: FairscanError) -> FairscanError:
        return error.with_issues([i.located("a.audit.yaml", 12, 3) for i in error.issues])

    [error] = deliver(REPORT, [failing], locate).errors
    assert error.issues[0].render().startswith("a.audit.yaml:12:3: output.history: locked")


def test_an_interrupt_is_not_a_delivery_failure() -> None:
    after = Probe("output.mlflow")
    with pytest.raises(KeyboardInterrupt):
        deliver(REPORT, [Probe("output.history", KeyboardInterrupt()), after])
    assert after.seen == []
