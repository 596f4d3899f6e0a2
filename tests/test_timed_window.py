"""The timed window is clean: proved by paired runs, for every latency arm on a driver.

For each arm, in one process and back to back:

* **planted before the notify** -- a wait of ``D`` between ``t0`` and the notify call must
  raise the median by ``D``, within a tolerance a noisy 2-vCPU machine passes every time;
* **planted after the notify** -- the same wait right after the notify must *not* show: the
  waiter is already woken (the planted wait sleeps, so it holds no GIL the waiter needs);
* **long settle** -- with a settle far longer than any wake, the median stays far below the
  settle: the settle sleep is outside the window, and ``t0`` is not taken before it.

and, structurally, that an unplanted timed step runs nothing between storing ``t0`` and calling
the notify (read from its bytecode, so a stray call, branch or hook there fails on any machine).

These catch, among others: ``t0`` taken before the settle, the settle (or any other wait)
moved inside the window, the planted delay moved after the notify, a driver that ignores the
planted delay.  They assert the *size* of a planted effect, never a speed.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import List

import pytest

from wakelab.core.model import LATENCY, Arm, MeasureParams
from wakelab.core.registry import all_arms

D_US = 3000  # the planted wait: large against the noise of a wake on this kind of machine
TOLERANCE_US = 1000  # how far the median's shift may stray from D
BASE = MeasureParams(n=25, warmup=3, settle_us=1000, timeout_s=2.0)
LONG_SETTLE = MeasureParams(n=6, warmup=1, settle_us=40_000, timeout_s=2.0)


def _window_arms() -> List[Arm]:
    # The storm driver's arms are proved in tests/test_storms.py: in a storm a probe's wake may
    # answer any sender's signal, so a planted delay shows by its size only in a sparse storm.
    return [a for a in all_arms() if a.kind == LATENCY and a.driver and a.driver != "storm"]


def _median_us(arm: Arm, params: MeasureParams) -> float:
    raw = arm.measure(params)
    assert raw.lost == 0, "%s lost %d wakes" % (arm.name, raw.lost)
    assert len(raw.samples_ns) == params.n
    assert all(s >= 0 for s in raw.samples_ns)
    return statistics.median(raw.samples_ns) / 1000.0


def _available(arm: Arm) -> None:
    reason = arm.unavailable_reason()
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("arm", _window_arms(), ids=lambda a: a.name)
def test_a_delay_planted_before_the_notify_shows_by_its_size(arm: Arm) -> None:
    _available(arm)
    base = _median_us(arm, BASE)
    planted = _median_us(arm, dataclasses.replace(BASE, planted_delay_us=D_US))
    shift = planted - base
    assert abs(shift - D_US) <= TOLERANCE_US, "%s: median moved %.0f µs for a %d µs delay (%.1f -> %.1f)" % (
        arm.name, shift, D_US, base, planted)


@pytest.mark.parametrize("arm", _window_arms(), ids=lambda a: a.name)
def test_a_delay_planted_after_the_notify_does_not_show(arm: Arm) -> None:
    _available(arm)
    base = _median_us(arm, BASE)
    after = _median_us(arm, dataclasses.replace(BASE, planted_after_us=D_US))
    assert after - base < D_US / 2, "%s: a delay after the notify moved the median %.0f µs (%.1f -> %.1f)" % (
        arm.name, after - base, base, after)


@pytest.mark.parametrize("arm", _window_arms(), ids=lambda a: a.name)
def test_a_long_settle_stays_outside_the_window(arm: Arm) -> None:
    _available(arm)
    median = _median_us(arm, LONG_SETTLE)
    assert median < LONG_SETTLE.settle_us / 2, "%s: median %.0f µs with a %d µs settle" % (
        arm.name, median, LONG_SETTLE.settle_us)


def _between_t0_and_the_notify(step) -> List[str]:  # type: ignore[no-untyped-def]
    """The instructions a timed step runs after storing ``t0`` up to its first call."""
    import dis

    instructions = list(dis.get_instructions(step))
    start = next(i for i, ins in enumerate(instructions) if ins.opname.startswith("STORE") and ins.argval == "t0")
    out = []
    for ins in instructions[start + 1:]:
        if ins.opname.startswith("CALL"):
            break
        out.append("%s %s" % (ins.opname, ins.argval))
    return out


@pytest.mark.parametrize("shape", ["plain", "before", "after", "both", "bind", "bind-after"])
def test_nothing_but_the_notify_call_follows_t0(shape: str) -> None:
    """Structurally: after ``t0`` is stored, an unplanted step loads the notify callable and calls it."""
    from wakelab.core.drivers import notify_step

    def nothing() -> None:
        return None

    kwargs = {
        "plain": {"notify": nothing},
        "before": {"notify": nothing, "before": nothing},
        "after": {"notify": nothing, "after": nothing},
        "both": {"notify": nothing, "before": nothing, "after": nothing},
        "bind": {"notify": None, "bind": lambda: nothing},
        "bind-after": {"notify": None, "bind": lambda: nothing, "after": nothing},
    }[shape]
    notify = kwargs.pop("notify")
    step = notify_step(BASE, notify, **kwargs)  # type: ignore[arg-type]
    loads = _between_t0_and_the_notify(step)
    allowed_ops = {"LOAD_DEREF", "LOAD_FAST", "PUSH_NULL", "PRECALL", "CACHE", "NOP", "RESUME"}
    assert all(item.split()[0] in allowed_ops for item in loads), loads
    assert [item.split()[1] for item in loads if item.startswith(("LOAD_DEREF", "LOAD_FAST"))] == ["fire"], loads
