"""The framework plug-ins, registered in one table.

Adding a framework is one new module here and one line in `REGISTRY`. Everything else
asks `get(state.framework)`.
"""

from __future__ import annotations

from runtop.frameworks.base import Framework
from runtop.frameworks.generic import GENERIC
from runtop.frameworks.nemo_rl import NEMO_RL
from runtop.frameworks.openrlhf import OPENRLHF
from runtop.frameworks.primerl import PRIME_RL
from runtop.frameworks.skyrl import SKYRL
from runtop.frameworks.trl import TRL
from runtop.frameworks.verl import VERL

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


__all__ = ["GENERIC", "REGISTRY", "UNKNOWN", "Framework", "all_frameworks", "get", "simulated"]
