"""SkyRL-agent's own numbers (framework-only counters live in the plug-in's state).

skyrl-agent logs one line per finished trajectory and per reward (`ft_reward`/`gt_reward`),
the format rule a trajectory broke and the model's own exceptions in its code blocks. No
other framework writes these, so `RunState` keeps no field for them: the SkyRL plug-in
gives each run an `AgentCounters` (`new_state`) and folds these events into it (`REDUCERS`);
`RunState.agent` reads it, empty for every other framework.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtop.parsers.events import AgentError, AgentReward, FormatFailure, Trajectory
from runtop.state.parts import AgentCounters
from runtop.state.run import RunState


def new_state() -> AgentCounters:
    return AgentCounters()


def _counters(state: RunState) -> AgentCounters:
    if not isinstance(state.plugin, AgentCounters):
        state.plugin = AgentCounters()
    return state.plugin


def _on_reward(state: RunState, ev: AgentReward, source: str) -> None:
    r = _counters(state).rewards.setdefault(ev.kind, [0, 0, 0.0])
    r[0] += 1
    r[1] += ev.value > 0
    r[2] += ev.value


def _on_trajectory(state: RunState, ev: Trajectory, source: str) -> None:
    state._activity(source)
    _counters(state).trajectories += 1


def _on_format(state: RunState, ev: FormatFailure, source: str) -> None:
    _counters(state).format_failures[ev.rule] += ev.count


def _on_agent_error(state: RunState, ev: AgentError, source: str) -> None:
    a = _counters(state)
    a.code_errors[ev.kind] += ev.count
    a.last_code_error[ev.kind] = ev.message


REDUCERS: dict[type, Callable[[RunState, Any, str], None]] = {
    AgentReward: _on_reward,
    Trajectory: _on_trajectory,
    FormatFailure: _on_format,
    AgentError: _on_agent_error,
}
