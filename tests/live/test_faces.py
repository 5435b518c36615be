"""Every face of runtop tells the same truth about the same run: the verdict, the first line
of its cause, and which step it is at — the TUI's band, `status` (markdown and JSON),
`check`, `status --all`, the fleet, `watch`, a notification and the exporter. Four runs: a
healthy one, one stalled with a named cause (vLLM rejecting every request), a dead one and
a finished one. The command-line faces run as the user runs them, in processes of their own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from runtop.engine.engine import Engine
from runtop.fleet.exporter import registry_for
from runtop.fleet.runs import row_of
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.outputs.notify import Notifier
from runtop.sources.gpu import RecordedProbe
from runtop.tui.app import RuntopApp
from tests.screen_text import screen_text
from tests.tui_helpers import H100, settle

RUNTOP = [sys.executable, "-m", "runtop"]
# name: (scenario, steps, age of the newest write in seconds, the verdict every face must give)
RUNS = {
    "healthy": ("stalled", 20, 30, "Healthy"),
    "hung": ("rollouts-hung", 20, 20 * 60, "Down"),
    "dead": ("trainer-oom", 9, 40, "Down"),
    "finished": ("healthy", 6, 40, "Finished"),
}


def age(root: Path, seconds: float) -> None:
    """Every file as last written `seconds` ago (the run stopped then)."""
    t = time.time() - seconds
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(dirpath, n), (t, t), follow_symlinks=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("faces") / "runs"
    for name, (scenario, steps, seconds, _) in RUNS.items():
        Simulator(str(where / name), scenario=scenario, max_steps=steps).run()
        age(where / name, seconds)
    return where


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RUNTOP, *args], capture_output=True, text=True, timeout=120)


def engine_for(root: Path, **kw) -> Engine:
    e = Engine(discover(str(root)), interval=0.2, vllm_url=None, disks=False, gpus=False, publishing=False, **kw)
    while True:
        e.step()
        if e.live.reader.done():
            break
    e.probe_all()
    return e


@pytest.mark.parametrize("name", list(RUNS))
def test_every_face_says_the_same_verdict_cause_and_step(runs, name):
    root = runs / name
    expected = RUNS[name][3]
    doc = json.loads(cli("status", "--json", str(root)).stdout)
    verdict, first, step_text = doc["health"]["verdict"], doc["health"]["reasons"][0], doc["progress"]["step_text"]
    assert verdict == expected, doc["health"]

    # `status`, the check-in's shape.
    md = cli("status", str(root)).stdout
    assert f"**Health**: {verdict} — {first}" in md
    assert f"**Step**: {step_text.removeprefix('step ')}\n" in md
    # `check`: its first line and its exit code.
    out = cli("check", str(root))
    line = out.stdout.splitlines()[0]
    assert line.startswith(f"{verdict}: {name} (") and first in line  # the directory, then the config's name
    assert out.returncode == {"Healthy": 0, "Finished": 0, "Degraded": 1, "Down": 2}[verdict]
    # `status --all`: the run's row.
    row = next(line for line in cli("status", "--all", str(runs)).stdout.splitlines() if f" {name} " in line)
    assert row.startswith(verdict) and row.rstrip().endswith(first)
    step = doc["progress"]["step"]
    assert f" {step if step is not None else '-'}/{doc['progress']['max_steps']} " in row
    # `watch`: the line it prints when the verdict is first known.
    said = cli("watch", str(root), "--duration", "2", "--interval", "0.5").stdout.splitlines()
    assert re.match(rf"\d\d:\d\d:\d\d {re.escape(verdict)}: {re.escape(first)}$", said[1]), said[:3]

    # The fleet's row, a notification, the exporter: one engine, as `runtop DIR` and `export` run them.
    engine = engine_for(root)
    assert engine.verdict.verdict == verdict and engine.verdict.reasons[0] == first
    fleet_row = row_of(str(root), engine)
    assert (fleet_row.verdict, fleet_row.cause, fleet_row.step) == (verdict, first, step)
    told = Notifier(name).observe(engine.verdict, engine.state, time.time())
    if verdict in ("Down", "Finished"):
        body = told[0].body.splitlines()
        assert body[0] == first and (step_text in body or verdict == "Finished" or step is None)
    else:
        assert told == []
    metrics = generate_latest(registry_for([engine])).decode()
    assert f'runtop_verdict{{run="{name}",verdict="{verdict}"}} 1.0' in metrics
    if engine.verdict.alerts and engine.verdict.alerts[0].severity != "info":
        lead = engine.verdict.alerts[0]
        assert f'runtop_finding{{rule="{lead.rule}",run="{name}",severity="{lead.severity}"}}' in metrics


@pytest.mark.parametrize("name", ["hung", "dead"])
async def test_the_tui_band_leads_with_the_same_cause_and_step(runs, name):
    root = runs / name
    doc = json.loads(cli("status", "--json", str(root)).stdout)
    first, step_text = doc["health"]["reasons"][0], doc["progress"]["step_text"]
    layout = discover(str(root))
    mon = Engine(layout, interval=0.2, gpu=RecordedProbe([H100]), vllm_url=None, disks=False)
    app = RuntopApp(layout, interval=0.2, monitor=mon)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        band = screen_text(app).splitlines()[:4]
    text = " ".join(band)
    assert f"Down {first[:80]}" in re.sub(r"\s+", " ", text), band
    assert step_text in text
