"""`runtop mcp [PATH…]`: runtop as a Model Context Protocol server, so an agent babysitting a run
reads runtop's verdict, cause and next step instead of grepping logs (docs/mcp.md).

Over stdio (the client starts it; nothing listens on a port), or with `--http 127.0.0.1:PORT`
behind `serve`'s token rule (`runtop.mcp.http`). One engine per run, stepped in a
thread as `runtop watch` steps it (`runtop.mcp.runs`); the tools are `runtop.mcp.tools` and
`runtop.mcp.logs`, wrapped here for the official `mcp` SDK (the optional extra
`runtop-rl[mcp]`). Actions are only ever proposed: a person sends them.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runtop.exit_codes import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from runtop.mcp.runs import Served

INSTALL = "runtop mcp needs the MCP SDK: pip install 'runtop-rl[mcp]' (or `pip install '.[mcp]'` in runtop's checkout)"

CHECKIN_PROMPT = """Check in on the training run {run}, as the hourly STATUS.md check-in is written.

1. Call `run_status` (run={run!r}): the verdict, its cause and phase, the next step, the progress and the
   last complete checkpoint. Say the verdict first, in one line, with the cause when there is one.
2. Call `findings` (run={run!r}, since={since!r}): what began or cleared since the last check-in; keep the
   answer's `cursor` for the next one.
3. Call `metrics` (run={run!r}, last_n=20): reward, loss, entropy, KL, grad norm and step time over the
   last steps, each with its trend; say which moved and which way is worse.
4. Call `disk` (run={run!r}) and `gpus`: free space where checkpoints go, and whether the GPUs work.
5. When the verdict is Down or Degraded, call `logs` (run={run!r}, query= the cause's words) for the
   record that shows it whole, and `propose_action` only for what the next step names.

Write the check-in as markdown: `## <UTC time> — <verdict>`, then Progress, Health (cause, evidence),
Metrics (a short table with trends), Disk and GPUs, Changes since the last check-in, Next step.
Never run an action yourself: quote the plan and the command a person confirms it with."""


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        import mcp  # noqa: F401
        from mcp.server.mcpserver import MCPServer  # noqa: F401
    except ImportError:
        print(f"runtop: {INSTALL}", file=sys.stderr)
        return EXIT_USAGE
    if args.http:
        from runtop.mcp.http import parse_address

        refused = parse_address(args.http)  # refused before any run is read
        if isinstance(refused, str):
            print(f"runtop: mcp: {refused}", file=sys.stderr)
            return EXIT_USAGE
    elif args.token_file:
        print("runtop: mcp: --token-file goes with --http (over stdio there is no token: the client started runtop)", file=sys.stderr)
        return EXIT_USAGE
    runs = serve_runs(args)
    try:
        if args.http:
            from runtop.mcp.http import serve_http

            return serve_http(build(runs), args.http, args.token_file, f"{len(runs)} run(s) ({', '.join(r.name for r in runs)})")
        build(runs).run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        for r in runs:
            r.close()
    return EXIT_OK


def serve_runs(args: argparse.Namespace) -> list[Served]:
    """An engine per run named (a directory of runs is every run in it, as `watch DIR`), started."""
    from runtop.config import load, load_judging
    from runtop.engine.engine import Engine
    from runtop.fleet.runs import FLEET_PROCESS_S, runs_of
    from runtop.frameworks.discovery import discover, with_ckpt_dir, with_metrics
    from runtop.mcp.runs import ActionSettings, Served, unique_names

    load(getattr(args, "config", None))  # a bad config fails here, in one line
    paths = runs_of(args.paths or ["."])
    fleet = len(paths) > 1
    if fleet:
        for name, flag in (("ckpt_dir", "--ckpt-dir"), ("metrics", "--metrics")):
            if getattr(args, name, None):
                from runtop.frameworks.discovery import DiscoveryError

                raise DiscoveryError(f"{flag} is for one run, and runtop mcp was given {len(paths)} runs: give one run with {flag}")
    cfg = load_judging(getattr(args, "config", None), getattr(args, "simulated_speed", None))
    actions = ActionSettings(read_only=args.read_only, config=args.config, tmux_socket=args.tmux_socket, tmux_session=args.tmux_session,
                             tmux_target=args.tmux_target, launch_cmd=args.launch_cmd)
    out: list[Served] = []
    for path, name in zip(paths, unique_names(paths)):
        layout = discover(path, getattr(args, "framework", None))
        if not fleet:
            layout = with_metrics(with_ckpt_dir(layout, args.ckpt_dir), args.metrics, None)
        # As `watch`: no vLLM port is guessed (`status --json` asks none either); a fleet's runs
        # leave the GPUs to the `gpus` tool and look at their processes every 30 s.
        engine = Engine(layout, interval=args.interval, poll=args.poll or fleet, thresholds=cfg, vllm_url=None, publishing=True,
                        gpus=not fleet, process_period=max(args.interval, FLEET_PROCESS_S) if fleet else None,
                        slurm_job=None if fleet else args.slurm_job, ray_address=None if fleet else args.ray_address)
        out.append(Served(name, layout.root, engine, actions, poll_only=fleet))
    for r in out:
        r.start()
    return out


def _tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool's failure is one line for the agent (an unknown run, a bad argument), never a traceback."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> Any:
        try:
            return fn(*a, **kw)
        except (LookupError, ValueError) as e:
            raise ToolError(str(e).strip("'\"")) from None
        except Exception as e:  # noqa: BLE001 - one line, as every runtop face says a failure
            raise ToolError(f"internal error: {type(e).__name__}: {e}") from None

    return wrapper


def build(runs: list[Served]) -> Any:
    """The MCP server over `runs`: the tools, a check-in resource per run, the check-in prompt."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.prompts.base import Prompt
    from mcp.server.mcpserver.resources import FunctionResource

    from runtop import __version__
    from runtop.mcp import logs as L
    from runtop.mcp import tools as T
    from runtop.mcp.runs import pick

    names = ", ".join(r.name for r in runs)
    server: Any = MCPServer(
        "runtop", version=__version__, log_level="WARNING",
        instructions=f"runtop judges RL training runs on this machine ({names}): call run_status for the verdict, its cause and "
                     "the next step; findings(since=cursor) for what changed; never act yourself: propose_action gives the plan a person confirms.",
    )
    one = "the run's name (or path); may be left out when one run is served"

    def list_runs(root: str | None = None) -> dict[str, Any]:
        return T.list_runs(runs, root)

    def run_status(run: str | None = None) -> dict[str, Any]:
        return T.run_status(pick(runs, run))

    def findings(run: str | None = None, since: int | str = 0) -> dict[str, Any]:
        return T.findings(pick(runs, run), since)

    def metrics(run: str | None = None, names: list[str] | None = None, last_n: int = 20) -> dict[str, Any]:
        return T.metrics(pick(runs, run), names, last_n)

    def logs(run: str | None = None, query: str | None = None, role: str | None = None, around_line: int | None = None,
             limit: int = 20) -> dict[str, Any]:
        return L.logs(pick(runs, run), query, role, around_line, limit)

    def checkpoints(run: str | None = None) -> dict[str, Any]:
        return T.checkpoints(pick(runs, run))

    def processes(run: str | None = None) -> dict[str, Any]:
        return T.processes(pick(runs, run))

    def gpus() -> dict[str, Any]:
        return T.gpus(runs)

    def disk(run: str | None = None) -> dict[str, Any]:
        return T.disk(pick(runs, run))

    def forensics(run: str | None = None) -> dict[str, Any]:
        return T.forensics(pick(runs, run))

    def propose_action(action: str, run: str | None = None) -> dict[str, Any]:
        return T.propose_action(pick(runs, run), action)

    described: list[tuple[Callable[..., Any], str]] = [
        (list_runs, f"The runs served ({names}), most troubled first: verdict, step a/b, last write, first-line cause. "
                    "root: only the runs under this directory."),
        (run_status, "The run's status JSON (as `runtop status --json`, without step rows): health.verdict, health.cause, health.wrapper "
                     f"(who reported it), health.phase, alerts (evidence), next.text, progress, last_complete_checkpoint. run: {one}."),
        (findings, "Incidents begun or cleared since `since`: a cursor from the last answer (0: everything kept) or a time (ISO 8601, "
                   "epoch seconds). Each incident appears once when it begins and once when it clears; keep `cursor` for the next call."),
        (metrics, "The newest last_n step rows (max 1000) for the named metrics (reward, loss, entropy, kl, grad_norm, seq_len, "
                  "step_time_s, …, or a run's own key), with each metric's trend. No names: every metric the run logs."),
        (logs, "Whole log records (a traceback whole) from the newest lines of the run's logs, redacted: the newest `limit` matching "
               "`query` (case-insensitive) from `role` (trainer, orchestrator, inference, …), or those around a line of the role's file."),
        (checkpoints, "The run's checkpoints (step, complete, bytes, why not complete) and the last complete one."),
        (processes, "The run's processes by role, each with its state, CPU and memory; roles missing or zombie."),
        (gpus, "This machine's GPUs (NVML): utilisation, memory, temperature, power, processes."),
        (disk, "The disks under the run and its checkpoints: free space, growth, and core dumps found."),
        (forensics, "Take the hang forensics now (py-spy stacks of every run process, process states, GPUs, log tails, disks) into a "
                    "folder in the run dir; answers what the stacks show and the folder."),
        (propose_action, "The vetted plan of an action (resume, stop, restart, open-logs, checkin): the exact text, the tmux pane and why "
                         "that pane, the confirmation token. NEVER executed here: a person confirms it (confirm_with)."),
    ]
    for fn, description in described:
        server.add_tool(_tool(fn), name=fn.__name__, description=description)

    for r in runs:
        server.add_resource(FunctionResource.from_function(
            functools.partial(T.checkin, r), uri=resource_uri(r), name=f"{r.name} check-in", mime_type="text/markdown",
            description=f"The STATUS.md check-in of {r.path} now (markdown), as `runtop status` prints it."))

    def check_in(run: str = runs[0].name, since: str = "0") -> str:
        return CHECKIN_PROMPT.format(run=run, since=since)

    server.add_prompt(Prompt.from_function(check_in, name="check_in", description="Check in on this run: the hourly STATUS.md check-in, written from runtop's tools."))

    return server


def resource_uri(run: Served) -> str:
    from urllib.parse import quote

    return f"runtop://runs/{quote(run.name if not os.path.isabs(run.name) else run.path, safe='')}/checkin"
