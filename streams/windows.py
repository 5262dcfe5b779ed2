"""Window and suppression options, in Kafka's shape."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from conf.errors import TopologyError
from topology.nodes import Windows


def _millis(value: int | timedelta, what: str) -> int:
    if isinstance(value, timedelta):
        return int(value / timedelta(milliseconds=1))
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopologyError(f"{what} takes milliseconds (int) or a timedelta, got {value!r}", node=what)
    return value


@dataclass(frozen=True)
class TimeWindows:
    """Tumbling or hopping windows ``[start, start + size)``, aligned to the epoch.

    ``TimeWindows.of_size(5000)`` is tumbling with no grace; ``.grace(ms)`` lets records up to
    ``grace`` behind stream time still update their window; ``.advance_by(ms)`` makes it hopping.
    As in Kafka 3+, the grace period defaults to zero.
    """

    size_ms: int | None = None
    advance_ms: int | None = None
    grace_ms: int = 0

    @classmethod
    def of_size(cls, size: int | timedelta) -> TimeWindows:
        size_ms = _millis(size, "TimeWindows.of_size")
        if size_ms <= 0:
            raise TopologyError(f"TimeWindows.of_size needs a positive size, got {size_ms} ms", node="TimeWindows.of_size")
        return cls(size_ms=size_ms)

    def grace(self, grace: int | timedelta) -> TimeWindows:
        grace_ms = _millis(grace, "TimeWindows.grace")
        if grace_ms < 0:
            raise TopologyError(f"TimeWindows.grace cannot be negative, got {grace_ms} ms", node="TimeWindows.grace")
        return replace(self, grace_ms=grace_ms)

    def advance_by(self, advance: int | timedelta) -> TimeWindows:
        advance_ms = _millis(advance, "TimeWindows.advance_by")
        if self.size_ms is None:
            raise TopologyError("TimeWindows.advance_by needs a size first: TimeWindows.of_size(ms)", node="TimeWindows.advance_by")
        if not 0 < advance_ms <= self.size_ms:
            raise TopologyError(
                f"TimeWindows.advance_by must be in (0, size={self.size_ms}] ms, got {advance_ms}",
                node="TimeWindows.advance_by",
            )
        return replace(self, advance_ms=advance_ms)

    def spec(self, operator: str) -> Windows:
        """The topology's window spec; raises naming ``operator`` if the windows are incomplete."""
        if self.size_ms is None or self.size_ms <= 0:
            raise TopologyError(f"{operator}() needs windows with a size: TimeWindows.of_size(ms)", node=operator)
        if self.grace_ms < 0:
            raise TopologyError(f"{operator}(): the grace period cannot be negative ({self.grace_ms} ms)", node=operator)
        advance = self.advance_ms if self.advance_ms is not None else self.size_ms
        if not 0 < advance <= self.size_ms:
            raise TopologyError(f"{operator}(): advance must be in (0, size] ms, got {advance}", node=operator)
        return Windows(size_ms=self.size_ms, advance_ms=advance, grace_ms=self.grace_ms)


@dataclass(frozen=True)
class Suppressed:
    """How a KTable's updates are held back. Only ``until_window_closes`` exists (emit-final):
    one result per window, once stream time passes ``window end + grace``."""

    @classmethod
    def until_window_closes(cls) -> Suppressed:
        return cls()
