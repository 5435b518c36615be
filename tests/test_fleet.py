"""Several runs at once (issue 17): `status --all` and `check --all` judge every run under a
directory, most troubled first; `check --all` exits with the worst run's code."""

from __future__ import annotations

import json
import subprocess
import sys

from runtop.frameworks import get
from runtop.simulator.primerl import Simulator


def runtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, timeout=120)


def test_every_run_under_a_directory_worst_first_and_the_worst_exit_code(tmp_path):
    Simulator(str(tmp_path / "a-fine"), scenario="healthy", max_steps=4).run()
    Simulator(str(tmp_path / "b-running"), scenario="healthy", max_steps=9, stop_after=3).run()
    Simulator(str(tmp_path / "z-dead"), scenario="trainer-oom", max_steps=9).run()
    get("verl").simulator(str(tmp_path / "c-verl"), "healthy", max_steps=3).run()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("nothing runtop reads")
    r = runtop("check", "--all", str(tmp_path))
    lines = r.stdout.splitlines()
    assert r.returncode == 2, r.stdout + r.stderr
    assert [ln.split(":")[0] for ln in lines] == ["Down", "Healthy", "Finished", "Finished"]
    assert lines[0].startswith("Down: z-dead — trainer died: torch.OutOfMemoryError") and "notes" not in r.stdout
    r = runtop("status", "--all", str(tmp_path))
    assert r.returncode == 0 and r.stdout.splitlines()[1].split()[:3] == ["Down", "z-dead", "prime-rl"]
    assert any(ln.split()[:3] == ["Finished", "c-verl", "verl"] for ln in r.stdout.splitlines())
    docs = json.loads(runtop("status", "--all", "--json", str(tmp_path)).stdout)
    assert [d["health"]["verdict"] for d in docs] == ["Down", "Healthy", "Finished", "Finished"]


def test_a_directory_of_healthy_runs_exits_0_and_a_run_dir_is_a_fleet_of_one(tmp_path):
    Simulator(str(tmp_path / "one"), scenario="healthy", max_steps=3).run()
    Simulator(str(tmp_path / "two"), scenario="healthy", max_steps=3).run()
    assert runtop("check", "--all", str(tmp_path)).returncode == 0
    r = runtop("check", "--all", str(tmp_path / "one"))
    assert r.returncode == 0 and r.stdout.startswith("Finished: one") and len(r.stdout.splitlines()) == 1
