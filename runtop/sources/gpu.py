"""GPUs through NVML, behind a small seam.

`GpuProbe` is the interface the app uses; `NvmlProbe` is the real one (nvidia-ml-py),
`RecordedProbe` replays readings (tests, and machines with no GPU). No NVML library
or no GPU is a one-line `error`, never an exception.

    python -m runtop.sources.gpu      # print one reading as JSON (run it on a GPU machine)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    used_bytes: int | None


@dataclass(frozen=True, slots=True)
class GpuReading:
    index: int
    name: str
    util_pct: float | None
    mem_used: int | None
    mem_total: int | None
    temp_c: float | None
    power_w: float | None
    processes: tuple[GpuProcess, ...] = ()
    error: str | None = None  # this device could not be read (NVMLError_GpuIsLost, …); the others still are


@dataclass
class GpuSnapshot:
    gpus: list[GpuReading] = field(default_factory=list)
    driver: str | None = None
    error: str | None = None
    taken_at: float = 0.0
    simulated: bool = False  # the demo's readings, not a machine's: said wherever they are shown


class GpuProbe(Protocol):
    def read(self) -> GpuSnapshot: ...


def _reading(nv: Any, i: int, h: Any) -> GpuReading:
    """One device's numbers; each field that NVML cannot give is None, the rest still come."""
    return GpuReading(
        index=i,
        name=_try(lambda: _text(nv.nvmlDeviceGetName(h))) or f"GPU {i}",
        util_pct=_try(lambda: float(nv.nvmlDeviceGetUtilizationRates(h).gpu)),
        mem_used=_try(lambda: int(nv.nvmlDeviceGetMemoryInfo(h).used)),
        mem_total=_try(lambda: int(nv.nvmlDeviceGetMemoryInfo(h).total)),
        temp_c=_try(lambda: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))),
        power_w=_try(lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
        processes=tuple(
            GpuProcess(p.pid, getattr(p, "usedGpuMemory", None))
            for p in (_try(lambda: nv.nvmlDeviceGetComputeRunningProcesses(h)) or [])
        ),
    )


def driver_library() -> bool:
    """Whether NVIDIA's driver library loads here, as pynvml loads it (Windows: left to pynvml)."""
    if sys.platform.startswith("win"):
        return True
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


class NvmlProbe:
    """nvidia-ml-py. Initialised once; a failure is remembered and reported, not retried each tick."""

    def __init__(self) -> None:
        self._nvml = None
        self._error: str | None = None
        if not driver_library():
            # What nvmlInit says on such a machine, without importing pynvml (0.1-0.2 s of
            # a one-shot status's start-up under load: docs/design.md, "Start-up").
            self._error = f"no NVML: {_nvml_text(Exception('NVML Shared Library Not Found'))}"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
        except ImportError:
            self._error = "no NVML: the nvidia-ml-py package is not installed"
        except Exception as e:  # noqa: BLE001 - pynvml raises NVMLError_LibraryNotFound, DriverNotLoaded, …
            self._error = f"no NVML: {_nvml_text(e)}"

    def read(self) -> GpuSnapshot:
        now = time.time()
        if self._nvml is None:
            return GpuSnapshot(error=self._error, taken_at=now)
        nv = self._nvml
        try:
            count = nv.nvmlDeviceGetCount()
            driver = _text(nv.nvmlSystemGetDriverVersion())
        except Exception as e:  # noqa: BLE001 - any NVMLError: report it in the pane
            return GpuSnapshot(error=f"NVML: {_nvml_text(e)}", taken_at=now)
        if count == 0:
            return GpuSnapshot(driver=driver, error="NVML found no GPU", taken_at=now)
        gpus = []
        for i in range(count):
            try:
                h = nv.nvmlDeviceGetHandleByIndex(i)
            except Exception as e:  # noqa: BLE001 - a lost GPU: say so on its row, read the rest
                gpus.append(GpuReading(i, f"GPU {i}", None, None, None, None, None, error=f"NVML: {_nvml_text(e)}"))
                continue
            gpus.append(_reading(nv, i, h))
        return GpuSnapshot(gpus=gpus, driver=driver, taken_at=now)


class RecordedProbe:
    """Replays recorded readings (the JSON `python -m runtop.sources.gpu` prints), one per read, the last repeating."""

    def __init__(self, readings: list[dict[str, Any]]) -> None:
        self._snaps = [snapshot_from_dict(r) for r in readings] or [GpuSnapshot(error="no recorded GPU readings")]
        self._i = 0

    def read(self) -> GpuSnapshot:
        snap = self._snaps[min(self._i, len(self._snaps) - 1)]
        self._i += 1
        return GpuSnapshot(list(snap.gpus), snap.driver, snap.error, time.time())


def snapshot_from_dict(d: dict[str, Any]) -> GpuSnapshot:
    gpus = []
    for g in d.get("gpus", []):
        procs = tuple(GpuProcess(int(p["pid"]), p.get("used_bytes")) for p in g.get("processes", []))
        gpus.append(
            GpuReading(
                int(g["index"]), str(g.get("name", "GPU")), g.get("util_pct"), g.get("mem_used"), g.get("mem_total"),
                g.get("temp_c"), g.get("power_w"), procs, g.get("error"),
            )
        )
    return GpuSnapshot(gpus, d.get("driver"), d.get("error"), float(d.get("taken_at") or 0.0))


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - one unsupported field (NVMLError_NotSupported) must not hide the rest
        return None


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvml_text(e: Exception) -> str:
    text = str(e) or type(e).__name__
    return text.replace("NVML Shared Library Not Found", "the NVIDIA driver library (libnvidia-ml.so) is not installed")


def main() -> int:
    snap = NvmlProbe().read()
    json.dump(asdict(snap), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if snap.error is None else 1


if __name__ == "__main__":
    raise SystemExit(main())
