"""`runtop serve PATH`: the TUI in a browser, through textual-serve's page, when SSH to the
training box is not at hand (docs/design.md, "`runtop serve`: a door with a lock").

A door, not an open port: each start makes a random token, printed as the URL to open (as
Jupyter does; `--token-file` writes it for scripts instead), and the page and its websocket
need it; the Origin must be this server; sessions and screens are capped; a session whose
client is gone is ended with its whole process group; `serve`'s exit ends every session it
started. Each session is read-only, and runs and writes nothing, unless `--allow-actions`,
which is refused on an address other machines reach (plain HTTP would carry the token there
in clear). The README shows the safe way from a laptop: `ssh -L 8765:127.0.0.1:8765 box`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import secrets
import signal
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from runtop.cli.common import _err, layout_of
from runtop.exit_codes import EXIT_USAGE
from runtop.serve.session import SERVED_DRIVER
from runtop.serve.token import loopback, remove_token, write_token

if TYPE_CHECKING:
    from runtop.serve.door import Door


def say(line: str) -> None:
    print(f"runtop serve: {line}", file=sys.stderr, flush=True)


def serve_argv(path: str, args: argparse.Namespace) -> list[str]:
    """The command each browser session runs: the TUI on the run, read-only and a visitor
    (nothing runs, nothing is written) unless actions were allowed. It carries no secret: the
    token never leaves `serve`."""
    argv = [sys.executable, "-m", "runtop", "tui", os.path.abspath(path), "--interval", str(args.interval)]
    if not args.allow_actions:
        argv += ["--read-only", "--visitor"]
    if args.config:
        argv += ["--config", os.path.abspath(args.config)]
    # The run's own options go to each session's TUI as they were given to serve (the run
    # options every command that reads a run takes).
    if args.ckpt_dir:
        argv += ["--ckpt-dir", os.path.abspath(args.ckpt_dir)]
    for m in args.metrics or ():
        argv += ["--metrics", os.path.abspath(m)]
    for flag, value in (("--framework", args.framework), ("--slurm-job", args.slurm_job), ("--ray-address", args.ray_address)):
        if value:
            argv += [flag, value]
    return argv


def session_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "TEXTUAL_DRIVER": SERVED_DRIVER,
        "TEXTUAL_COLOR_SYSTEM": "truecolor",
        "TERM_PROGRAM": "textual",
    })
    with contextlib.suppress(PackageNotFoundError):
        env["TERM_PROGRAM_VERSION"] = version("textual-serve")
    return env


def cmd_serve(args: argparse.Namespace) -> int:
    layout_of(args)  # a path runtop cannot read (or a --ckpt-dir, --metrics) fails here, in one line, not in the browser
    if not loopback(args.host):
        if args.allow_actions:
            _err(f"--allow-actions is refused on {args.host}: plain HTTP carries the token and every key in clear "
                 "to anyone on the way; serve on 127.0.0.1 and reach it with ssh -L")
            return EXIT_USAGE
        _err(f"warning: serving on {args.host} over plain HTTP: the token and the screen cross the network in clear; "
             "ssh -L to 127.0.0.1 is the safe way")
    try:
        from runtop.serve.door import Door, assets
    except ImportError:
        _err("runtop serve needs textual-serve: pip install '.[serve]' in runtop's checkout")
        return EXIT_USAGE
    token = secrets.token_urlsafe(32)
    ident: tuple[int, int] | None = None
    if args.token_file:
        written = write_token(args.token_file, token)
        if isinstance(written, str):
            _err(written)
            return EXIT_USAGE
        ident = written
    door = Door(
        argv=serve_argv(args.path, args), env=session_env(), host=args.host, token=token,
        title=f"runtop {os.path.basename(os.path.abspath(args.path))}", assets=assets(),
        max_sessions=args.max_sessions, client_timeout=args.client_timeout, say=say,
    )
    mode = "actions allowed" if args.allow_actions else "read-only"
    # A script reads the token from its file: it is not printed where logs may keep it.
    shown = f"?token=… (the token is in {args.token_file})" if args.token_file else f"?token={token}"
    try:
        return asyncio.run(_serve(door, args, f"serving {args.path} ({mode}) on http://{args.host}:{args.port}/{shown}"))
    finally:
        if ident is not None:
            remove_token(args.token_file, ident)


class _OneLine(logging.Handler):
    """aiohttp's own complaints (a client that broke a connection mid-request): one line each,
    never a traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        say(f"{record.getMessage()}" + (f" ({type(exc).__name__}: {exc})" if exc is not None else ""))


async def _serve(door: Door, args: argparse.Namespace, banner: str) -> int:
    from aiohttp import web

    log = logging.getLogger("aiohttp")
    log.addHandler(_OneLine())
    log.propagate = False

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    runner = web.AppRunner(door.app(), access_log=None, handle_signals=False, shutdown_timeout=5.0)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, args.host, args.port).start()
        except OSError as e:
            _err(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}")
            return EXIT_USAGE
        print(f"runtop: {banner}", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await door.close()
        await runner.cleanup()
    say("stopped; no session is left running")
    return 0
