"""A probe: one source of system facts (processes, disks, GPUs, vLLM's `/metrics`, tmux),
asked at its own period in a thread of its own, under a deadline.
"""

from __future__ import annotations

from collections.abc import Callable

from runtop.sources.deadline import Deadline, Slow, Unavailable


class Probe:
    """A callable run at most every `period` seconds, in a thread of its own with a
    wall-clock `deadline`; its exception becomes an error line.

    The engine starts a due probe and collects it later (`collect`): a probe that hangs
    (a `/metrics` endpoint dripping bytes, a stuck tmux or NVML call) never stalls the
    reader or the screen. Past its deadline it says "slow: gave up after N s"
    once and backs off to `idle_period`. While its source is `Unavailable` (or one of
    `unavailable`'s exceptions) the probe waits `idle_period` between tries.
    """

    def __init__(
        self,
        name: str,
        period: float,
        fn: Callable[[], object],
        *,
        idle_period: float | None = None,
        unavailable: tuple[type[Exception], ...] = (),
        deadline: float | None = None,
    ) -> None:
        self.name, self.period, self.fn = name, period, fn
        self.idle_period = idle_period if idle_period is not None else period
        self.unavailable: tuple[type[Exception], ...] = (Unavailable, *unavailable)
        self.last = float("-inf")
        self._wait = period
        self._call: Deadline[object] = Deadline(f"{name} probe", fn, deadline if deadline is not None else max(5.0, 2 * period))
        self._pending = False
        self._slow_said = False

    def inline(self) -> None:
        """Call its source on the caller's thread from now on: a simulated source answers at once
        (the detection replay asks its processes and GPUs at every tick of a simulated clock)."""
        self._call.inline = True

    @property
    def waiting(self) -> bool:
        """A call has started and not been collected."""
        return self._pending

    def due(self, now: float) -> bool:
        return not self._pending and now - self.last >= self._wait

    def soon(self) -> None:
        """Ask at the next step, whatever the period (what it says is wanted now)."""
        self.last = float("-inf")

    def start(self, now: float) -> None:
        self.last = now
        self._wait = self.period
        self._pending = True
        self._slow_said = False
        self._call.start()

    def collect(self, wait: float = 0.0) -> tuple[bool, object | None, str | None]:
        """(news, value, error): news is False while the call runs within its deadline."""
        if not self._pending:
            return False, None, None
        try:
            done, value = self._call.result(wait)
        except Slow as e:
            self._wait = self.idle_period  # back off: the next try comes after the stuck one ends
            if self._slow_said:
                return False, None, None
            self._slow_said = True
            return True, None, str(e)
        except self.unavailable as e:
            self._pending = False
            self._wait = self.idle_period
            return True, None, str(e)
        except Exception as e:  # noqa: BLE001 - one failing source never takes the app down
            self._pending = False
            return True, None, f"{self.name} probe failed: {type(e).__name__}: {e}"
        if not done:
            return False, None, None
        self._pending = False
        return True, value, None

    def run(self, now: float) -> tuple[object | None, str | None]:
        """Start and wait for one call (tests, and callers with nothing else to do)."""
        self.start(now)
        while True:
            news, value, error = self.collect(0.05)
            if news or not self._pending:
                return value, error
