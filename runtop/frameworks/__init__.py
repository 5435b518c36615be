"""The framework plug-ins, registered in one table.

Adding a framework is one new module here and one line in `REGISTRY`. Everything else
asks `get(state.framework)`.
"""

from __future__ import annotations

import functools

from runtop.frameworks.base import Framework
from runtop.frameworks.generic import GENERIC
from runtop.frameworks.nemo_rl import NEMO_RL
from runtop.frameworks.openrlhf import OPENRLHF
from runtop.frameworks.primerl import PRIME_RL
from runtop.frameworks.skyrl import SKYRL
from runtop.frameworks.trl import TRL
from runtop.frameworks.verl import VERL
from runtop.sources.processes import COMMON_TITLES, ProcessRoles

# The generic reader last: it claims only what no other plug-in's evidence claims.
REGISTRY: dict[str, Framework] = {fw.name: fw for fw in (PRIME_RL, SKYRL, VERL, TRL, OPENRLHF, NEMO_RL, GENERIC)}
UNKNOWN = Framework()


def get(name: str) -> Framework:
    """The plug-in of a run (a do-nothing one for a framework runtop does not know)."""
    return REGISTRY.get(name, UNKNOWN)


def all_frameworks() -> list[Framework]:
    return list(REGISTRY.values())


def simulated() -> list[Framework]:
    """The plug-ins with a simulator (`runtop demo --framework`)."""
    return [fw for fw in REGISTRY.values() if fw.simulates]


@functools.lru_cache(maxsize=1)
def _titles() -> tuple[tuple[str, str], ...]:
    own = [t for fw in REGISTRY.values() for t in fw.process_titles]
    # Most specific first: `ray::skyrl_entrypoint` before the `ray::` catch-all.
    return tuple(sorted((*own, *COMMON_TITLES), key=lambda t: -len(t[0])))


def process_roles(framework: Framework | None = None) -> ProcessRoles:
    """What the process source needs to know of a run's processes, from its plug-in (None or
    `UNKNOWN`: a run of no known framework, whose driver may be any framework's). Every
    plug-in's titles are known whichever runs: a titled process is named whoever it belongs to."""
    fw = framework or UNKNOWN
    drivers = tuple(REGISTRY.values()) if fw is UNKNOWN else (fw,)

    def driver(cmd: str) -> str | None:
        return next((d.driver_role for d in drivers if d.is_driver(cmd)), None)

    return ProcessRoles(_titles(), driver, fw.driver_role, fw.launch_dir, fw.owns_run_dir, fw.expected_roles)


__all__ = ["GENERIC", "REGISTRY", "UNKNOWN", "Framework", "all_frameworks", "get", "process_roles", "simulated"]
