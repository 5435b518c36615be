"""The run's own Prometheus endpoints: the trainer's `/metrics` says whether steps
still come when the files on a shared filesystem say nothing, and the inference server is
asked on the port the run's config gives it. Real HTTP servers on 127.0.0.1 serve pages made
by prometheus_client, the library prime-rl's `MetricsServer` uses (its gauges, its names)."""

from __future__ import annotations

import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from runtop.cli.main import main
from runtop.engine.engine import Engine
from runtop.frameworks.discovery import discover
from runtop.frameworks.primerl.sim import Simulator
from runtop.sources.vllm_metrics import DEFAULT_URL


class PageServer:
    """Serves `page()` at /metrics on a free 127.0.0.1 port."""

    def __init__(self, page) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                body = page()
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def trainer_page(step: int, last_step_ts: float) -> bytes:
    """What prime-rl's trainer MetricsServer serves (src/prime_rl/utils/metrics_server.py's gauges)."""
    reg = CollectorRegistry()
    Gauge("trainer_step", "Current training step", registry=reg).set(step)
    Gauge("trainer_loss", "Current training loss", registry=reg).set(0.25)
    Gauge("trainer_last_step_timestamp_seconds", "Unix timestamp of last step", registry=reg).set(last_step_ts)
    Gauge("trainer_mfu_percent", "Model FLOPS utilization %", registry=reg).set(41.0)
    return generate_latest(reg)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def silent_run(tmp_path, trainer_port: int, hours: float = 1.0) -> str:
    """A run whose files have said nothing for `hours` (as a lagging NFS shows them), its
    trainer configured to serve /metrics on `trainer_port`."""
    root = str(tmp_path / "run")
    Simulator(root, scenario="healthy", max_steps=20, stop_after=7).run()
    with open(os.path.join(root, "configs", "rl.toml"), "a") as f:
        f.write(f"\n[trainer.metrics_server]\nport = {trainer_port}\n")
    old = time.time() - hours * 3600
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))
    return root


@pytest.fixture
def trainer():
    state = {"step": 40, "ts": time.time() - 5}
    server = PageServer(lambda: trainer_page(state["step"], state["ts"]))
    yield server, state
    server.close()


def test_logs_silent_but_the_trainer_steps_on_its_own_clock_is_a_lag_not_a_death(tmp_path, capsys, trainer):
    server, _ = trainer
    root = silent_run(tmp_path, server.port)
    code = main(["check", root])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("Degraded"), out
    assert "the trainer's /metrics says step 40 came" in out and "(the logs show step 7)" in out
    assert f"127.0.0.1:{server.port}/metrics" in out


def test_logs_and_trainer_both_silent_is_down_with_the_trainers_word_as_evidence(tmp_path, capsys, trainer):
    server, state = trainer
    state["ts"] = time.time() - 3600
    root = silent_run(tmp_path, server.port)
    code = main(["check", root])
    out = capsys.readouterr().out
    assert code == 2 and "no log write anywhere for" in out.splitlines()[0]
    assert "trainer /metrics: step 40, 1h00m ago" in out


def test_no_trainer_endpoint_answering_leaves_the_verdict_to_the_files(tmp_path, capsys):
    root = silent_run(tmp_path, free_port())  # configured, nothing listening
    code = main(["check", root])
    assert code == 2 and "no log write anywhere for" in capsys.readouterr().out.splitlines()[0]


def test_the_inference_server_is_asked_on_the_port_its_config_gives(tmp_path):
    page = (b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 7.0\n"
            b"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} 2.0\n"
            b"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n")
    vllm = PageServer(lambda: page)
    try:
        root = str(tmp_path / "run")
        Simulator(root, scenario="healthy", max_steps=20, stop_after=3).run()
        with open(os.path.join(root, "configs", "rl.toml"), "a") as f:
            f.write(f"\n[inference.server]\nport = {vllm.port}\n")
        engine = Engine(discover(root), vllm_url=DEFAULT_URL, processes=False, disks=False, gpus=False, publishing=False)
        engine.step()
        engine.probe_all(timeout=5)
        assert engine.system.vllm_http is not None and engine.system.vllm_http.running == 7
        engine.close()
    finally:
        vllm.close()
