"""vLLM lines inside `inference.log` → events (stats, engine death, bad requests, ulimit)."""

from __future__ import annotations

import re
from dataclasses import replace

from .crashes import crash_signature, error_notice
from .events import INFERENCE, Event, Kind, Notice, VllmStats
from .numbers import finite, strict_float
from .records import Record

_STAT_RES = {
    "prompt_tok_s": re.compile(r"Avg prompt throughput: ([\d.]+)", re.ASCII),
    "gen_tok_s": re.compile(r"Avg generation throughput: ([\d.]+)", re.ASCII),
    "running": re.compile(r"Running: (\d+) reqs", re.ASCII),
    "waiting": re.compile(r"Waiting: (\d+) reqs", re.ASCII),
    "kv_cache_pct": re.compile(r"(?:GPU )?KV cache usage: ([\d.]+)%", re.ASCII),
    "prefix_hit_pct": re.compile(r"Prefix cache hit rate: ([\d.]+)%", re.ASCII),
    "preemptions": re.compile(r"Preemptions: (\d+)", re.ASCII),
}
MAX_TOKENS_RE = re.compile(r"'max_tokens' or 'max_completion_tokens' is too large: (\d+)", re.ASCII)
ULIMIT_RE = re.compile(r"Found ulimit of (\d+) and failed to automatically increase", re.ASCII)
HTTP_STATUS_RE = re.compile(r'" (\d{3}) ', re.ASCII)
# vLLM says it is dead in these words, at any level: v0 `CRITICAL … MQLLMEngine is already
# dead` (vllm#10024), `Request … failed (engine dead).` at INFO, v1 `EngineCore encountered
# a fatal error.` / `EngineCore failed to start.` (docs/formats.md, "What genuine output adds").
DEATH_RE = re.compile(
    r"EngineCore encountered a fatal error|MQLLMEngine is already dead|failed \(engine dead\)|EngineDeadError"
    r"|Engine core proc \S+ died unexpectedly|EngineCore failed to start|Engine core initialization failed"
    r"|Engine loop has died|Background loop has errored already",
    re.ASCII,
)


def parse_stats(msg: str, time: str | None) -> VllmStats | None:
    if "Avg prompt throughput" not in msg:
        return None
    vals: dict[str, float] = {}
    for name, pat in _STAT_RES.items():
        m = pat.search(msg)
        num = strict_float(m.group(1)) if m else None
        if num is not None:
            vals[name] = num

    def i(name: str) -> int | None:
        v = finite(vals.get(name))
        return int(v) if v is not None else None

    return VllmStats(
        running=i("running"),
        waiting=i("waiting"),
        kv_cache_pct=vals.get("kv_cache_pct"),
        prompt_tok_s=vals.get("prompt_tok_s"),
        gen_tok_s=vals.get("gen_tok_s"),
        preemptions=i("preemptions"),
        prefix_hit_pct=vals.get("prefix_hit_pct"),
        time=time,
    )


def parse_record(rec: Record, role: str = INFERENCE) -> list[Event]:
    msg = rec.message
    t = rec.time
    if rec.fmt == "uvicorn":
        # Access lines: only failed requests are news (a 400 often means max_tokens too large).
        if '" 2' in msg or '" 3' in msg:
            return []
        m = HTTP_STATUS_RE.search(msg)
        if m and m.group(1)[0] in "45":
            return [Notice(INFERENCE, "WARNING", f"http_{m.group(1)}", msg.strip(), t)]
        return []
    stats = parse_stats(msg, t)
    if stats is not None:
        return [stats]
    lines = rec.lines()
    text = msg if not lines else msg + "\n" + "\n".join(lines)
    m = MAX_TOKENS_RE.search(text)
    if m:
        # The rollouts then hang at 0/N (docs/incidents.md#max-tokens-stuck-rollouts): name it.
        detail = text[m.start() :].split("\n", 1)[0]
        return [Notice(INFERENCE, "ERROR", Kind.MAX_TOKENS_TOO_LARGE, detail.strip(), t)]
    if "ulimit" in msg:
        m = ULIMIT_RE.search(msg)
        if m:
            return [Notice(INFERENCE, "WARNING", Kind.ULIMIT, msg.strip(), t)]
    if "Shutting down FastAPI HTTP server" in msg:
        return [Notice(INFERENCE, "INFO", Kind.INFERENCE_SHUTDOWN, msg.strip(), t)]
    level = rec.level or ""
    dead = DEATH_RE.search(text) is not None
    if dead or level in ("ERROR", "CRITICAL") or rec.fmt == "orphan":
        # The record's own traceback names the cause (EngineCore's TypeError); a line that
        # only says the engine is dead is a death all the same, whatever its level.
        notice = error_notice(rec, INFERENCE, traceback_is_fatal=False)
        if notice is not None and dead and not (notice.fatal and notice.certain):
            notice = replace(notice, fatal=True, certain=True)
        return [notice] if notice else []
    if level == "WARNING":
        sig = crash_signature(msg)
        return [Notice(INFERENCE, "WARNING", sig[0] if sig else "warning", msg.strip(), t)]
    return []
