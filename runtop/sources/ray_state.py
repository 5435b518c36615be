"""The Ray cluster a run lives in: its nodes and its dead actors, through Ray's
state API (`ray.util.state.list_nodes` / `list_actors(detail=True)`).

Which cluster: `--ray-address`, or `RAY_ADDRESS` in the environment of one of the run's own
processes, or (when the run's own `ray` processes run on this machine) the local cluster
(`address="auto"`). Never runtop's own `RAY_ADDRESS`: another cluster's dead actors must not
judge this run.

The seam is `StateApi`: two calls that answer lists of plain dicts, as
`dataclasses.asdict` makes of the state API's records. `RayApi` is the real one (the optional
extra `.[ray]`, imported in the probe's thread: `import ray` takes a second);
tests hand recorded answers of a real cluster (`tests/recordings/ray_state_2.60.json`).
The death reasons are Ray's own (`actor_died_error_context.reason`): `WORKER_DIED` (the
process died: the kernel's OOM killer, a segfault), `NODE_DIED`, `OUT_OF_MEMORY` (Ray's
memory monitor), `RAY_KILL`, `OWNER_DIED`; `creation_task_failure_context` holds the
exception an actor's `__init__` raised.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from runtop.sources.deadline import Unavailable
from runtop.sources.environ import run_env

RAY_PERIOD_S = 30.0
EXCEPTION_RE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)):\s?(.*)$", re.M)


@dataclass(frozen=True)
class RayNode:
    node_id: str
    ip: str
    alive: bool
    head: bool
    gpus: float
    message: str = ""  # why it died: `Unexpected termination: health check failed …`
    end_ms: int = 0


@dataclass(frozen=True)
class DeadActor:
    actor_id: str
    class_name: str
    name: str
    pid: int | None
    node_id: str
    ip: str
    reason: str  # Ray's word (`WORKER_DIED`, `NODE_DIED`, `OUT_OF_MEMORY`, …), or `CREATION_TASK_ERROR`
    message: str  # the first line that says why

    @property
    def label(self) -> str:
        return f"{self.class_name}{f' {self.name!r}' if self.name else ''}{f' pid {self.pid}' if self.pid else ''}"


@dataclass(frozen=True)
class RaySnapshot:
    address: str
    how: str  # the proof it is this run's cluster
    nodes: tuple[RayNode, ...]
    dead: tuple[DeadActor, ...]
    alive_actors: int
    taken: float

    def lost_nodes(self) -> list[RayNode]:
        return [n for n in self.nodes if not n.alive]

    def gpus(self) -> float:
        return sum(n.gpus for n in self.nodes if n.alive)


class StateApi(Protocol):
    def list_nodes(self, address: str) -> list[dict[str, Any]]: ...
    def list_actors(self, address: str) -> list[dict[str, Any]]: ...


class RayApi:
    """The real state API (needs `ray[default]`)."""

    def __init__(self) -> None:
        try:
            from ray.util import state  # noqa: F401 - checked here, used below
        except ImportError:
            raise Unavailable("Ray's state API needs the extra: pip install '.[ray]' in runtop's checkout") from None

    @staticmethod
    def _dicts(rows: Sequence[object]) -> list[dict[str, Any]]:
        import dataclasses

        return [dataclasses.asdict(r) if dataclasses.is_dataclass(r) and not isinstance(r, type) else dict(r) for r in rows]  # type: ignore[call-overload]

    def list_nodes(self, address: str) -> list[dict[str, Any]]:
        from ray.util.state import list_nodes

        return self._dicts(list_nodes(address=address, detail=True, limit=1000, raise_on_missing_output=False, timeout=10))

    def list_actors(self, address: str) -> list[dict[str, Any]]:
        from ray.util.state import list_actors

        return self._dicts(list_actors(address=address, detail=True, limit=10000, raise_on_missing_output=False, timeout=10))


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def death_of(actor: dict[str, Any]) -> tuple[str, str]:
    """(reason, message) of a dead actor's `death_cause`."""
    cause = actor.get("death_cause") or {}
    if not isinstance(cause, dict):
        return "UNKNOWN", str(cause)[:200]
    died = cause.get("actor_died_error_context")
    if isinstance(died, dict):
        return str(died.get("reason") or "UNKNOWN"), _first_line(str(died.get("error_message") or ""))
    created = cause.get("creation_task_failure_context")
    if isinstance(created, dict):
        text = str(created.get("formatted_exception_string") or "")
        # The innermost exception its __init__ raised (the last `Type: message` line not Ray's own).
        found = [m for m in EXCEPTION_RE.finditer(text) if not m.group(1).startswith("ray.")]
        return "CREATION_TASK_ERROR", (f"{found[-1].group(1)}: {found[-1].group(2)}" if found else _first_line(text))
    for key, value in cause.items():
        if isinstance(value, dict):
            return key.replace("_context", "").upper(), _first_line(str(value.get("error_message") or value))
    return "UNKNOWN", ""


def snapshot(address: str, how: str, nodes: list[dict[str, Any]], actors: list[dict[str, Any]], now: float | None = None) -> RaySnapshot:
    """The state API's answers (plain dicts) → what the rules read. Pure."""
    by_id: dict[str, RayNode] = {}
    for n in nodes:
        res = n.get("resources_total") or {}
        node = RayNode(
            node_id=str(n.get("node_id") or ""), ip=str(n.get("node_ip") or ""), alive=n.get("state") == "ALIVE",
            head=bool(n.get("is_head_node")), gpus=float(res.get("GPU") or 0.0) if isinstance(res, dict) else 0.0,
            message=str(n.get("state_message") or ""), end_ms=int(n.get("end_time_ms") or 0),
        )
        by_id[node.node_id] = node
    dead = []
    alive = 0
    for a in actors:
        if a.get("state") != "DEAD":
            alive += a.get("state") == "ALIVE"
            continue
        reason, message = death_of(a)
        cause = a.get("death_cause") or {}
        ctx = cause.get("actor_died_error_context") if isinstance(cause, dict) else None
        ip = str((ctx or {}).get("node_ip_address") or by_id.get(str(a.get("node_id") or ""), RayNode("", "", True, False, 0)).ip)
        dead.append(DeadActor(
            actor_id=str(a.get("actor_id") or ""), class_name=str(a.get("class_name") or "?"), name=str(a.get("name") or ""),
            pid=int(a["pid"]) if isinstance(a.get("pid"), int) and a["pid"] else None, node_id=str(a.get("node_id") or ""),
            ip=ip, reason=reason, message=message,
        ))
    return RaySnapshot(address, how, tuple(by_id.values()), tuple(dead), alive, time.time() if now is None else now)


def address_of(explicit: str | None, pids: Sequence[int], has_ray_processes: bool) -> tuple[str, str] | None:
    """(address, how it was found), or None: the run names no cluster runtop can tie to it."""
    if explicit:
        return explicit, "--ray-address"
    found = run_env(pids, "RAY_ADDRESS")
    if found is not None:
        return found[0], f"RAY_ADDRESS of the run's pid {found[1]}"
    if has_ray_processes:
        return "auto", "the run's own Ray processes on this machine"
    return None


class RayClient:
    def __init__(self, api: StateApi | None = None) -> None:
        self._api = api

    def read(self, address: str, how: str) -> RaySnapshot:
        if self._api is None:
            self._api = RayApi()  # in the probe's thread: `import ray` is slow
        try:
            nodes = self._api.list_nodes(address)
            actors = self._api.list_actors(address)
        except Unavailable:
            raise
        except Exception as e:  # noqa: BLE001 - the state API raises many types (RayStateApiException, ConnectionError, …)
            raise Unavailable(f"Ray state API at {address}: {type(e).__name__}: {_first_line(str(e))[:160]}") from None
        return snapshot(address, how, nodes, actors)
