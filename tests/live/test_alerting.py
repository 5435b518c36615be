"""Reaching the researcher: incidents, recoveries and the finish go to real apprise
`json://` targets on 127.0.0.1, once each; a target that refuses or hangs is retried and
reported and never holds the engine; the heartbeat pings; `--on-alert` runs an argv."""

from __future__ import annotations

import os
import sys
import time

import pytest

from runtop.config import ConfigError, NotifyConfig, load_notify
from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.outputs.alerting import Alerting
from runtop.sources.gpu import RecordedProbe
from tests.alert_server import AlertServer
from tests.tui_helpers import FIXED_MTIME, H100, FixedDisks, FixedProcs, fixed_tree, freeze_mtimes, healthy_tree

PY = sys.executable


@pytest.fixture
def server():
    s = AlertServer()
    yield s
    s.close()


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def poll(engine: Engine, n: int = 1) -> None:
    """`n` polls, each after the probes' interval (as `runtop watch` waits between them)."""
    for _ in range(n):
        time.sleep(engine.interval + 0.01)
        engine.step()


def engine_for(root: str, alerting: Alerting, clock, tree) -> Engine:
    freeze_mtimes(root)
    return Engine(discover(root), interval=0.05, gpu=RecordedProbe([H100]), vllm_url=None, clock=clock,
                  proc_sampler=FixedProcs(tree), disk_sampler=FixedDisks(), alerting=alerting, publishing=False)


def test_the_trainer_dies_and_one_message_names_the_cause_however_long_it_stays_dead(simulated, server):
    root = simulated("trainer-oom", max_steps=9)
    alerting = Alerting(NotifyConfig(urls=(server.url(),)), "my-run", root)
    engine = engine_for(root, alerting, Clock(FIXED_MTIME + 40), fixed_tree(FIXED_MTIME))
    try:
        poll(engine, 2)
        assert engine.verdict.verdict == "Down"
        (msg,) = server.wait_for(1)
        assert msg["title"] == "runtop: my-run is Down"
        body = msg["message"]
        assert body.startswith("trainer died: torch.OutOfMemoryError") and "cause: torch.OutOfMemoryError" in body
        assert "trainer 2/9 · rollouts 3" in body and "last complete checkpoint: step 2" in body and "next: lower trainer.model.seq_len (the trainer ran out of GPU memory); then stop, then resume from step 2" in body
        assert f"{root} at 2026-08-21" in body  # where, and when on the engine's clock
        poll(engine, 30)
        time.sleep(0.3)
        assert len(server.received) == 1
    finally:
        engine.close()


def test_a_stalled_run_that_writes_again_sends_one_recovery(simulated, server):
    root = simulated("healthy", max_steps=9, stop_after=4)
    clock = Clock(FIXED_MTIME + 3600)  # an hour of silence with every process alive: Down
    alerting = Alerting(NotifyConfig(urls=(server.url(),)), "my-run", root)
    engine = engine_for(root, alerting, clock, healthy_tree(FIXED_MTIME))
    try:
        poll(engine)
        assert engine.verdict.verdict == "Down"
        server.wait_for(1)
        clock.t = FIXED_MTIME + 10  # the run wrote again a moment ago: Healthy
        poll(engine, 3)
        assert engine.verdict.verdict == "Healthy"
        down, back = server.wait_for(2)
        assert down["title"].endswith("is Down") and "no log write anywhere" in down["message"]
        assert back["title"] == "runtop: my-run recovered (Healthy)" and "cleared: no log write anywhere" in back["message"]
        poll(engine, 10)
        time.sleep(0.3)
        assert len(server.received) == 2
    finally:
        engine.close()


def test_a_finished_run_is_told_once(simulated, server):
    root = simulated("healthy", max_steps=4)
    alerting = Alerting(NotifyConfig(urls=(server.url(),)), "my-run", root)
    engine = engine_for(root, alerting, Clock(FIXED_MTIME + 40), fixed_tree(FIXED_MTIME))
    try:
        poll(engine, 5)
        (msg,) = server.wait_for(1)
        assert msg["title"] == "runtop: my-run finished" and "finished at step 4" in msg["message"]
    finally:
        engine.close()


@pytest.mark.parametrize("behaviour", ["refuses", "hangs"])
def test_a_failing_target_is_retried_and_reported_and_never_holds_the_poll(simulated, behaviour):
    bad = AlertServer(status=500) if behaviour == "refuses" else AlertServer(hang_s=30)
    good = AlertServer()
    root = simulated("trainer-oom", max_steps=9)
    # `rto`: apprise's read timeout for this target, so a hang is a failure within a second.
    alerting = Alerting(NotifyConfig(urls=(bad.url() + "?rto=1&cto=1", good.url())), "my-run", root)
    engine = engine_for(root, alerting, Clock(FIXED_MTIME + 40), fixed_tree(FIXED_MTIME))
    try:
        t0 = time.monotonic()
        poll(engine, 3)
        assert time.monotonic() - t0 < 2.0  # the engine queued and went on
        assert len(good.wait_for(1)) == 1  # the good target is not held by the bad one
        deadline = time.monotonic() + 10
        while not alerting.problems() and time.monotonic() < deadline:
            time.sleep(0.05)
        (problem,) = alerting.problems()
        assert problem.startswith(f"json://127.0.0.1:{bad.port}/alerts") and "retrying in" in problem
        while len(bad.received) < 2 and time.monotonic() < deadline + 5:
            time.sleep(0.05)
        assert len(bad.received) >= 2  # retried
        poll(engine)
        said = [f for f in engine.verdict.alerts if f.rule == "notify"]
        assert said and said[0].severity == "info" and engine.verdict.verdict == "Down"  # said, and it does not change the verdict
    finally:
        alerting.close(0.5)
        bad.close()
        good.close()


def test_the_heartbeat_starts_pings_while_alive_and_fails_on_down(simulated, server):
    root = simulated("healthy", max_steps=9, stop_after=4)
    clock = Clock(FIXED_MTIME + 40)
    cfg = NotifyConfig(heartbeat=server.url("/ping/abc", scheme="http"), heartbeat_every_s=60)
    alerting = Alerting(cfg, "my-run", root)
    engine = engine_for(root, alerting, clock, healthy_tree(FIXED_MTIME))
    try:
        poll(engine)
        for minute in range(1, 4):
            clock.t = FIXED_MTIME + 40 + 61 * minute
            poll(engine)
        clock.t = FIXED_MTIME + 3600  # silent an hour: Down
        poll(engine, 2)
        deadline = time.monotonic() + 5
        while "/ping/abc/fail" not in server.paths() and time.monotonic() < deadline:
            time.sleep(0.02)
        paths = server.paths()
        assert paths[0] == "/ping/abc/start" and paths.count("/ping/abc") >= 3 and paths[-1] == "/ping/abc/fail"
        assert paths.count("/ping/abc/fail") == 1
    finally:
        engine.close()


@pytest.mark.live
def test_on_alert_runs_an_argv_with_the_runs_environment(simulated, tmp_path):
    root = simulated("trainer-oom", max_steps=9)
    out = tmp_path / "env.txt"
    script = ("import os, sys, json; keys = ['RUNTOP_RUN', 'RUNTOP_VERDICT', 'RUNTOP_RULE', 'RUNTOP_CAUSE', 'RUNTOP_EVENT'];"
              "open(sys.argv[1], 'w').write(json.dumps({k: os.environ[k] for k in keys} | {'json': json.load(open(os.environ['RUNTOP_JSON']))['health']['verdict']}))")
    alerting = Alerting(NotifyConfig(on_alert=(PY, "-c", script, str(out))), "my-run", root)
    engine = engine_for(root, alerting, Clock(FIXED_MTIME + 40), fixed_tree(FIXED_MTIME))
    try:
        engine.step()
        deadline = time.monotonic() + 10
        # Written whole by the command: wait for its text, not just the file (open() creates it empty first).
        while not (out.exists() and out.read_text().endswith("}")) and time.monotonic() < deadline:
            time.sleep(0.05)
        import json

        got = json.loads(out.read_text())
        assert got == {"RUNTOP_RUN": root, "RUNTOP_VERDICT": "Down", "RUNTOP_RULE": "crash", "RUNTOP_CAUSE": "torch.OutOfMemoryError",
                       "RUNTOP_EVENT": "incident", "json": "Down"}
        log = os.path.join(root, ".runtop", "on-alert.log")
        deadline = time.monotonic() + 5
        while not os.path.exists(log) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ": exit 0" in open(log).read()
    finally:
        engine.close()


@pytest.mark.live
def test_an_on_alert_command_that_hangs_is_killed_at_its_timeout(simulated):
    root = simulated("trainer-oom", max_steps=9)
    alerting = Alerting(NotifyConfig(on_alert=(PY, "-c", "import time; time.sleep(60)"), on_alert_timeout_s=0.5), "my-run", root)
    engine = engine_for(root, alerting, Clock(FIXED_MTIME + 40), fixed_tree(FIXED_MTIME))
    try:
        t0 = time.monotonic()
        engine.step()
        deadline = time.monotonic() + 10
        while not alerting.problems() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert time.monotonic() - t0 < 5
        assert "ran past 0.5 s and was killed" in alerting.problems()[0]
        assert "killed after 0.5 s" in open(os.path.join(root, ".runtop", "on-alert.log")).read()
    finally:
        alerting.close(0.2)


def test_urls_and_tokens_are_redacted_wherever_they_are_shown(simulated):
    root = simulated("trainer-oom", max_steps=9)
    alerting = Alerting(NotifyConfig(urls=("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", "nonsense://x")), "r", root)
    try:
        names = [w.status.name for w in alerting.targets] + alerting.errors
        assert not any("TIiajkdnlazkcOXrIdevi7FQ" in n for n in names)
        assert any(n.startswith("slack://") for n in names) and any("not a URL apprise can send to" in n for n in names)
    finally:
        alerting.close(0.2)


def test_notify_config_from_the_file_and_the_command_line(tmp_path):
    cfg = tmp_path / "runtop.toml"
    cfg.write_text('[notify]\nurls = ["ntfys://my-topic"]\nmin_severity = "warning"\non_alert = ["notify-send", "runtop"]\n')
    n = load_notify(str(cfg), heartbeat="https://hc-ping.com/abc")
    assert n.urls == ("ntfys://my-topic",) and n.min_severity == "warning" and n.on_alert == ("notify-send", "runtop")
    assert n.heartbeat == "https://hc-ping.com/abc"
    cfg.write_text('[notify]\non_alert = "notify-send runtop"\n')
    with pytest.raises(ConfigError, match="an argv"):
        load_notify(str(cfg))
    cfg.write_text('[notify]\nmin_severity = "loud"\n')
    with pytest.raises(ConfigError, match="min_severity"):
        load_notify(str(cfg))


def test_runtop_watch_pages_once_and_runtop_notify_test_says_whether_it_arrived(simulated, server):
    import subprocess

    def runtop(*args: str, timeout: float = 60):
        return subprocess.run([PY, "-m", "runtop", *args], capture_output=True, text=True, timeout=timeout)

    root = simulated("trainer-oom", max_steps=9)
    r = runtop("watch", root, "--notify", server.url(), "--duration", "3", "--interval", "0.2", timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"alerts to json://127.0.0.1:{server.port}/alerts" in r.stdout and "alert (incident): runtop: run-trainer-oom is Down" in r.stdout
    msgs = server.messages()
    assert len(msgs) == 1 and "torch.OutOfMemoryError" in msgs[0]["message"]

    r = runtop("notify", "--test", server.url())
    assert r.returncode == 0 and "delivered" in r.stdout and server.messages()[-1]["title"].startswith("runtop: test message")
    refusing = AlertServer(status=500)
    try:
        r = runtop("notify", "--test", refusing.url(), "--test", server.url())
        assert r.returncode == 1 and "NOT delivered" in r.stdout.splitlines()[0] and r.stdout.splitlines()[1].endswith(": delivered")
    finally:
        refusing.close()


def test_an_error_quoting_the_endpoint_loses_its_token():
    from runtop.outputs.delivery import scrub

    url = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"
    said = scrub("Failed to send Slack notification to https://hooks.slack.com/services/T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ: 404", url)
    assert "TIiajkdnlazkcOXrIdevi7FQ" not in said and said.endswith(": 404")
    assert scrub("refused by json://user:hunter2secret@host/x", "json://user:hunter2secret@host/x") == "refused by json://user:…@host/x"
