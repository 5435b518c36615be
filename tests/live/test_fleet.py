"""Several runs at once: `status --all` and `check --all` judge every run under a
directory, most troubled first; `check --all` exits with the worst run's code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from runtop.frameworks import get
from runtop.frameworks.primerl.sim import Simulator


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


# ---- A directory of runs is a fleet for every command that reads runs ----------------------

def three_runs(tmp_path) -> str:
    """An output dir of three runs, as a user's `outputs/` holds them: one dead, one still
    training, one finished."""
    out = tmp_path / "outputs"
    Simulator(str(out / "a-fine"), scenario="healthy", max_steps=9, stop_after=3).run()
    Simulator(str(out / "b-finished"), scenario="healthy", max_steps=3).run()
    Simulator(str(out / "z-dead"), scenario="trainer-oom", max_steps=9).run()
    return str(out)


def test_check_and_status_on_a_directory_of_runs_judge_every_run_not_the_newest_one(tmp_path):
    """`runtop check outputs/` used to judge only the newest run and exit with its code: a dead
    run beside it went unseen. Without --all it now says every run, worst first."""
    out = three_runs(tmp_path)
    r = runtop("check", out)
    assert r.returncode == 2, r.stdout + r.stderr
    assert [ln.split(":")[0] for ln in r.stdout.splitlines()] == ["Down", "Healthy", "Finished"]
    assert r.stdout.splitlines()[0].startswith("Down: z-dead — trainer died")
    assert r.stdout.splitlines()[1].startswith("Healthy: a-fine — step 3/9"), r.stdout  # where it is, as `check RUN` says
    assert runtop("check", "--all", out).stdout == r.stdout
    r = runtop("status", out)
    assert r.returncode == 0 and [ln.split()[1] for ln in r.stdout.splitlines()[1:]] == ["z-dead", "a-fine", "b-finished"]
    docs = json.loads(runtop("status", "--json", out).stdout)
    assert [d["health"]["verdict"] for d in docs] == ["Down", "Healthy", "Finished"]


def test_one_run_dir_reads_as_it_always_did(tmp_path):
    out = three_runs(tmp_path)
    r = runtop("check", os.path.join(out, "z-dead"))
    # One run's check line (named by its directory, the config's name beside it), not a table.
    assert r.returncode == 2 and r.stdout.startswith("Down: z-dead (reverse-text") and not r.stdout.startswith("verdict")
    doc = json.loads(runtop("status", "--json", os.path.join(out, "b-finished")).stdout)
    assert isinstance(doc, dict) and doc["health"]["verdict"] == "Finished"


def test_an_option_of_one_run_given_with_several_is_refused_in_one_line(tmp_path):
    out = three_runs(tmp_path)
    for args, code in ((("status", out, "--append"), 2), (("check", out, "--slurm-job", "4242"), 3),
                       (("watch", out, "--ckpt-dir", out), 2), (("status", "--all", out, "--append"), 2)):
        r = runtop(*args)
        assert r.returncode == code and r.stdout == "", (args, r.stdout, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and "holds 3 runs (a-fine, b-finished, z-dead)" in r.stderr, r.stderr
    assert not any(os.path.exists(os.path.join(out, run, "STATUS.md")) for run in os.listdir(out))


def test_export_of_a_directory_serves_every_run(tmp_path):
    out = three_runs(tmp_path)
    prom = tmp_path / "runs.prom"
    r = runtop("export", out, "--textfile", str(prom), "--once")
    assert r.returncode == 0, r.stderr
    up = sorted(ln for ln in prom.read_text().splitlines() if ln.startswith("runtop_up{"))
    assert up == [f'runtop_up{{run="{n}"}} 1.0' for n in ("a-fine", "b-finished", "z-dead")]
    assert 'runtop_verdict{run="z-dead",verdict="Down"} 1.0' in prom.read_text()


def test_watch_of_a_directory_watches_every_run_and_each_alert_names_its_run(tmp_path):
    from tests.alert_server import AlertServer

    out = three_runs(tmp_path)
    server = AlertServer()
    try:
        r = runtop("watch", out, "--notify", server.url(), "--heartbeat", server.url("/hb", "http"),
                   "--duration", "3", "--interval", "0.3", "--every", "1h")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].split(" ", 1)[1].startswith("watching 3 runs under " + out + " (a-fine, b-finished, z-dead)")
        assert any(ln.endswith("z-dead: alert (incident): runtop: z-dead is Down") for ln in lines), r.stdout
        assert any(ln.endswith("b-finished: alert (finished): runtop: b-finished finished") for ln in lines)
        assert any(" a-fine: Healthy" in ln for ln in lines)
        for run in ("a-fine", "b-finished", "z-dead"):  # --every: a check-in in each run's own STATUS.md
            assert os.path.isfile(os.path.join(out, run, "STATUS.md"))
        time.sleep(0.5)
        titles = sorted(m["title"] for m in server.messages())
        assert titles == ["runtop: b-finished finished", "runtop: z-dead is Down"]
        # One heartbeat for the directory: started once, failed once (a run is Down).
        assert [p for p in server.paths() if p.startswith("/hb")] == ["/hb/start", "/hb/fail"]
    finally:
        server.close()


def test_a_command_that_acts_on_one_run_names_the_runs_and_picks_none(tmp_path):
    """`runtop send resume outputs/ --yes` used to act on the newest run: a resume typed into a
    run the user did not name. Each command of one run now names the runs instead."""
    out = three_runs(tmp_path)
    for args in (("send", "resume", out, "--yes"), ("actions", out), ("forensics", out), ("follow", out)):
        r = runtop(*args)
        assert r.returncode == 2 and r.stdout == "", (args, r.stdout)
        assert r.stderr == f"runtop: {args[0]}: {out} holds 3 runs (a-fine, b-finished, z-dead): give one run's directory\n"
    assert not any(os.path.exists(os.path.join(out, run, ".runtop")) for run in os.listdir(out))
    r = runtop("actions", os.path.join(out, "z-dead"))  # one run: as before
    assert r.returncode == 0 and r.stdout.startswith("resume ")
