"""System probes: real `statvfs` and files for the disk pane; recorded NVML readings; vLLM's /metrics."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from runtop.sources.disk import DiskSampler, find_core_dumps
from runtop.sources.gpu import NvmlProbe, RecordedProbe, snapshot_from_dict
from runtop.sources.vllm_metrics import fetch, parse_metrics
from tests.tui_helpers import H100


def test_disk_bars_match_df_and_share_a_filesystem(tmp_path):
    sampler = DiskSampler([("root", "/"), ("output dir", str(tmp_path)), ("/dev/shm", "/dev/shm"), ("gone", str(tmp_path / "nope"))])
    snap = sampler.sample(now=0.0)
    st = os.statvfs("/")
    root = next(d for d in snap.disks if "root" in d.labels)
    assert root.total == st.f_blocks * st.f_frsize
    # df's Use%: used / (used + available), rounded up.
    df = subprocess.run(["df", "--output=pcent", "/"], capture_output=True, text=True).stdout.split()[-1].rstrip("%")
    assert abs(root.pct - int(df)) <= 1
    if os.stat("/").st_dev == os.stat(tmp_path).st_dev:
        assert root.labels == ("root", "output dir")  # one filesystem, one bar
    assert any("gone" in e and "No such file" in e for e in snap.errors)


def test_growth_rate_and_time_to_full_from_real_writes(tmp_path):
    sampler = DiskSampler([("output dir", str(tmp_path))])
    first = sampler.sample(now=1000.0).disks[0]
    assert first.growth_bps is None
    with open(tmp_path / "shard.bin", "wb") as f:
        f.write(os.urandom(1 << 20) * 32)  # 32 MiB, really written
        f.flush()
        os.fsync(f.fileno())
    later = sampler.sample(now=1010.0).disks[0]
    assert later.growth_bps is not None and later.growth_bps > 0
    assert later.full_in_s is not None and later.full_in_s == pytest.approx(later.free / later.growth_bps)


def test_core_dumps_are_found_and_checkpoint_shards_are_not_walked(tmp_path):
    ray = tmp_path / "ray" / "session_2026" / "runtime_resources" / "working_dir_files"
    ray.mkdir(parents=True)
    with open(ray / "core.67012", "wb") as f:
        f.truncate(9 << 30)
    (tmp_path / "core").write_bytes(b"x")
    shards = tmp_path / "ckpts" / "global_step_2" / "policy"
    shards.mkdir(parents=True)
    (shards / "core").write_bytes(b"not a dump")  # inside a checkpoint: not looked at
    (tmp_path / "core.txt").write_text("notes")  # not a core dump's name
    found = dict(find_core_dumps([str(tmp_path)]))
    assert found == {str(ray / "core.67012"): 9 << 30, str(tmp_path / "core"): 1}


def test_recorded_gpu_readings_round_trip_through_the_probe_json():
    snap = RecordedProbe([H100]).read()
    assert [g.util_pct for g in snap.gpus] == [97, 0] and snap.gpus[0].processes[0].pid == 4242
    again = snapshot_from_dict(json.loads(json.dumps({**H100, "taken_at": 1.0})))
    assert again.gpus == snap.gpus


def test_the_real_nvml_path_says_why_there_is_no_gpu():
    """On this machine (no NVIDIA driver) the real probe reports one line, never raises."""
    snap = NvmlProbe().read()
    if snap.gpus:
        pytest.skip("this machine has a GPU: the probe found it")
    assert snap.error and snap.error.startswith(("no NVML", "NVML")) and "\n" not in snap.error
    # The module's probe command (run it on a GPU machine) exits 1 with the same JSON shape.
    r = subprocess.run([sys.executable, "-m", "runtop.sources.gpu"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["error"] == snap.error


METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-4B"} 96.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-4B"} 32.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-4B"} 4.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-4B"} 0.231
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-4B"} 7.0
"""


def test_vllm_metrics_text():
    s = parse_metrics(METRICS)
    assert (s.running, s.waiting, s.preemptions) == (128, 4, 7) and s.kv_cache_pct == pytest.approx(23.1)
    old = parse_metrics(METRICS.replace("kv_cache_usage_perc", "gpu_cache_usage_perc"))
    assert old.kv_cache_pct == pytest.approx(23.1)
    assert parse_metrics("# nothing\nprocess_cpu_seconds_total 1.0\n") is None


def _serve(body: bytes):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            return None

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_fetch_from_a_real_http_server_and_unreachable_ones():
    srv = _serve(METRICS.encode())
    try:
        stats, err = fetch(f"http://127.0.0.1:{srv.server_port}/metrics")
        assert err is None and stats.running == 128
    finally:
        srv.shutdown()
    srv = _serve(b"<html>not prometheus</html>{{{")
    try:
        stats, err = fetch(f"http://127.0.0.1:{srv.server_port}/metrics")
        assert stats is None and err
    finally:
        srv.shutdown()
    stats, err = fetch("http://127.0.0.1:9/metrics", timeout=0.5)
    assert stats is None and "unreachable" in err
