"""Window and suppression options, in Kafka's shape."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from deltastreams.conf.errors import TopologyError
from deltastreams.topology.nodes import JoinWindowsSpec, SessionWindowsSpec, Windows


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

    @classmethod
    def of_size_with_no_grace(cls, size: int | timedelta) -> TimeWindows:
        """Kafka's name for ``of_size(size)``."""
        return cls.of_size(size)

    @classmethod
    def of_size_and_grace(cls, size: int | timedelta, grace: int | timedelta) -> TimeWindows:
        """Kafka's name for ``of_size(size).grace(grace)``."""
        return cls.of_size(size).grace(grace)

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
class SessionWindows:
    """Session windows: records of a key less than ``gap`` apart belong to one session, which
    grows (and merges with its neighbours) as records arrive. ``of_inactivity_gap_and_grace(gap,
    grace)``: a record up to ``grace`` behind the close of its session (end + gap) by stream time
    still counts; ``of_inactivity_gap_with_no_grace(gap)``: none."""

    gap_ms: int
    grace_ms: int = 0

    @classmethod
    def of_inactivity_gap_and_grace(cls, gap: int | timedelta, grace: int | timedelta) -> SessionWindows:
        return cls(_millis(gap, "SessionWindows.of_inactivity_gap_and_grace"), _millis(grace, "SessionWindows.of_inactivity_gap_and_grace"))._checked()

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, gap: int | timedelta) -> SessionWindows:
        return cls(_millis(gap, "SessionWindows.of_inactivity_gap_with_no_grace"), 0)._checked()

    def _checked(self) -> SessionWindows:
        if self.gap_ms <= 0:
            raise TopologyError(f"SessionWindows: the inactivity gap must be positive, got {self.gap_ms} ms", node="SessionWindows")
        if self.grace_ms < 0:
            raise TopologyError(f"SessionWindows: the grace period cannot be negative, got {self.grace_ms} ms", node="SessionWindows")
        return self

    def spec(self) -> SessionWindowsSpec:
        return SessionWindowsSpec(self.gap_ms, self.grace_ms)


@dataclass(frozen=True)
class SlidingWindows:
    """Sliding windows: every distinct set of a key's records at most ``difference`` apart is a
    window (Kafka's ``SlidingWindows.ofTimeDifferenceAndGrace``); a record may still update a
    window until stream time passes the window's end plus ``grace``."""

    difference_ms: int
    grace_ms: int = 0

    @classmethod
    def of_time_difference_and_grace(cls, difference: int | timedelta, grace: int | timedelta) -> SlidingWindows:
        what = "SlidingWindows.of_time_difference_and_grace"
        return cls(_millis(difference, what), _millis(grace, what))._checked()

    @classmethod
    def of_time_difference_with_no_grace(cls, difference: int | timedelta) -> SlidingWindows:
        """Kafka's ``ofTimeDifferenceWithNoGrace``."""
        return cls(_millis(difference, "SlidingWindows.of_time_difference_with_no_grace"), 0)._checked()

    of_time_difference_without_grace = of_time_difference_with_no_grace
    """The name this had before it took Kafka's."""

    def _checked(self) -> SlidingWindows:
        if self.difference_ms <= 0 or self.grace_ms < 0:
            raise TopologyError(f"SlidingWindows: the time difference must be positive and the grace not negative, got {self.difference_ms} ms and {self.grace_ms} ms", node="SlidingWindows")
        return self


@dataclass(frozen=True)
class JoinWindows:
    """The window of a stream-stream join: a record at time ``t`` joins the other stream's
    records with the same key in ``[t - before, t + after]``.

    ``JoinWindows.of_time_difference_and_grace(d, g)``: ``before = after = d``, and records that
    found no partner (left and outer joins) wait ``g`` more for a late one before going out joined
    with None. ``of_time_difference_with_no_grace(d)``: no grace. ``.before(ms)`` / ``.after(ms)``
    make the window asymmetric. As in Kafka 3+, there is no constructor without a grace choice.
    """

    before_ms: int = 0
    after_ms: int = 0
    grace_ms: int = 0

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: int | timedelta, grace: int | timedelta) -> JoinWindows:
        difference = _millis(time_difference, "JoinWindows.of_time_difference_and_grace")
        grace_ms = _millis(grace, "JoinWindows.of_time_difference_and_grace")
        return cls(difference, difference, grace_ms)._checked("JoinWindows.of_time_difference_and_grace")

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: int | timedelta) -> JoinWindows:
        """Kafka's ``ofTimeDifferenceWithNoGrace``."""
        difference = _millis(time_difference, "JoinWindows.of_time_difference_with_no_grace")
        return cls(difference, difference, 0)._checked("JoinWindows.of_time_difference_with_no_grace")

    of_time_difference_without_grace = of_time_difference_with_no_grace
    """The name this had before it took Kafka's."""

    def before(self, time_difference: int | timedelta) -> JoinWindows:
        """Join records up to ``time_difference`` earlier (may be negative, if ``after`` makes
        up for it)."""
        return replace(self, before_ms=_millis(time_difference, "JoinWindows.before"))._checked("JoinWindows.before")

    def after(self, time_difference: int | timedelta) -> JoinWindows:
        """Join records up to ``time_difference`` later."""
        return replace(self, after_ms=_millis(time_difference, "JoinWindows.after"))._checked("JoinWindows.after")

    def _checked(self, what: str) -> JoinWindows:
        if self.before_ms + self.after_ms < 0:
            raise TopologyError(f"{what}: the window (before + after = {self.before_ms + self.after_ms} ms) must not be negative", node=what)
        if self.grace_ms < 0:
            raise TopologyError(f"{what}: the grace period cannot be negative, got {self.grace_ms} ms", node=what)
        return self

    def spec(self) -> JoinWindowsSpec:
        return JoinWindowsSpec(self.before_ms, self.after_ms, self.grace_ms)


@dataclass(frozen=True)
class EmitStrategy:
    """When a windowed aggregation forwards results: ``on_window_update()`` (every revision, the
    default) or ``on_window_close()`` (each window once, when stream time passes its end plus
    grace: its final result, as Kafka 3.3+'s emit-final)."""

    final: bool = False

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        return cls(final=False)

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        return cls(final=True)


@dataclass(frozen=True)
class BufferConfig:
    """How much a time-limited suppression may hold: ``BufferConfig.unbounded()``,
    ``BufferConfig.max_records(n)``, ``BufferConfig.max_bytes(n)`` (then
    ``.with_max_records(n)`` / ``.with_max_bytes(n)``); when full it emits its oldest keys early,
    unless ``.shut_down_when_full()`` (the job fails instead; ``.emit_early_when_full()`` switches
    back)."""

    records_limit: int | None = None
    bytes_limit: int | None = None
    shut_down: bool = False

    @classmethod
    def unbounded(cls) -> BufferConfig:
        return cls()

    @classmethod
    def max_records(cls, records: int) -> BufferConfig:
        return cls()._with(records_limit=records)

    @classmethod
    def max_bytes(cls, size: int) -> BufferConfig:
        return cls()._with(bytes_limit=size)

    def with_max_records(self, records: int) -> BufferConfig:
        return self._with(records_limit=records)

    def with_max_bytes(self, size: int) -> BufferConfig:
        return self._with(bytes_limit=size)

    def emit_early_when_full(self) -> BufferConfig:
        return replace(self, shut_down=False)

    def shut_down_when_full(self) -> BufferConfig:
        return replace(self, shut_down=True)

    def _with(self, **bounds: int) -> BufferConfig:
        for name, bound in bounds.items():
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
                raise TopologyError(f"BufferConfig: {name} takes a non-negative int, got {bound!r}", node="BufferConfig")
        return replace(self, **bounds)


@dataclass(frozen=True)
class Suppressed:
    """How a KTable's updates are held back: ``until_window_closes()`` (one final result per
    window, once stream time passes ``window end + grace``) or ``until_time_limit(limit,
    buffer)`` (a key's latest update, ``limit`` of stream time after the key was first buffered,
    or earlier when the buffer is full)."""

    time_limit_ms: int | None = None
    buffer: BufferConfig = BufferConfig()

    @classmethod
    def until_window_closes(cls, buffer: BufferConfig | None = None) -> Suppressed:
        """``buffer``: ``BufferConfig.unbounded()`` (the default) or a bound with
        ``.shut_down_when_full()`` (final results cannot be emitted early: the job fails)."""
        if buffer is None:
            return cls()
        if not isinstance(buffer, BufferConfig):
            raise TopologyError(f"Suppressed.until_window_closes takes a BufferConfig, got {buffer!r}", node="Suppressed")
        bounded = buffer.records_limit is not None or buffer.bytes_limit is not None
        if bounded and not buffer.shut_down:
            raise TopologyError(
                "Suppressed.until_window_closes: final results cannot be emitted early; bound the buffer with .shut_down_when_full()",
                node="Suppressed",
            )
        return cls(None, buffer)

    @classmethod
    def until_time_limit(cls, limit: int | timedelta, buffer: BufferConfig | None = None) -> Suppressed:
        limit_ms = _millis(limit, "Suppressed.until_time_limit")
        if limit_ms < 0:
            raise TopologyError(f"Suppressed.until_time_limit: the limit cannot be negative, got {limit_ms} ms", node="Suppressed")
        if buffer is not None and not isinstance(buffer, BufferConfig):
            raise TopologyError(f"Suppressed.until_time_limit takes a BufferConfig, got {buffer!r}", node="Suppressed")
        return cls(limit_ms, buffer if buffer is not None else BufferConfig.unbounded())
