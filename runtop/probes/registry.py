"""The probes on the seam (`runtop.probes.seam`), one line each: adding a probe is its module
here and its line below (docs/architecture.md, "Adding a probe"). Each factory takes the
engine's options and gives its probe, or None where they turn it off."""

from __future__ import annotations

from runtop.probes import ray, slurm, trainer, vllm
from runtop.probes.seam import Factory

PROBES: tuple[Factory, ...] = (
    vllm.make,
    trainer.make,
    slurm.make,
    ray.make,
)
