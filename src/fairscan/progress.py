"""Progress reporting: the library calls an observer; only the CLI draws anything."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, task: str, total: int | None) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def done(self) -> None: ...


class NullProgress:
    """Default observer: does nothing."""

    def start(self, task: str, total: int | None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def done(self) -> None:
        pass
