"""A one-shot read pays only for what it uses: `runtop status` on a run answers without
importing the screen (Textual), the GPU library when no NVIDIA driver is there, the alert
senders, the HTTP client or the MCP SDK (docs/design.md, "Start-up")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Modules a read never needs; each cost tens to hundreds of ms of a first status under load.
NOT_FOR_A_READ = ("textual", "rich.console", "apprise", "prometheus_client", "mcp", "asyncio", "http.client", "urllib.request", "plotext")


def modules_after(argv: list[str]) -> tuple[int, set[str]]:
    probe = (
        "import sys, contextlib, io, json\nfrom runtop.cli import main as cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = cli.main({argv!r})\n"
        "print(json.dumps([rc, sorted(sys.modules)]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    rc, mods = json.loads(out.splitlines()[-1])
    return rc, set(mods)


@pytest.mark.parametrize("command", ["status", "check"])
def test_a_status_of_a_crashed_run_loads_no_screen_no_http_and_no_agent_sdk(tmp_path, command):
    """Someone runs `runtop status` over ssh on a run that just died: the answer comes from the
    log alone, and none of the live view's or the integrations' libraries are loaded for it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "orchestrator.log").write_text(
        "14:00:01 SUCCESS Step 3 | 31.0s | Reward 0.5\n14:00:09 ERROR Error in scoring\nTraceback (most recent call last):\n"
        '  File "/app/env.py", line 12, in score\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n'
    )
    rc, mods = modules_after([command, str(tmp_path)])
    assert rc in (0, 1, 2, 4)  # it answered (the verdict's exit code for `check`)
    loaded = sorted(m for m in NOT_FOR_A_READ if m in mods)
    assert loaded == []
    # The read itself did happen: the reader and the judge were loaded.
    assert {"runtop.engine.snapshot", "runtop.engine.engine"} <= mods


def test_the_gpu_probe_says_why_without_loading_nvml_where_no_driver_is(monkeypatch):
    """On a CPU box the GPU pane says the driver library is missing, as NVML itself says it,
    without the 0.1-0.2 s of importing nvidia-ml-py first."""
    probe = (
        "import sys\nfrom runtop.sources.gpu import NvmlProbe, driver_library\n"
        "snap = NvmlProbe().read()\n"
        "print(driver_library(), snap.error, 'pynvml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    has_driver = out[0] == "True"
    if has_driver:
        pytest.skip("this machine has NVIDIA's driver library: NVML is read for real")
    error, loaded = out[1].rsplit(" ", 1)
    assert error.strip() == "no NVML: the NVIDIA driver library (libnvidia-ml.so) is not installed"
    assert loaded.strip() == "False"
