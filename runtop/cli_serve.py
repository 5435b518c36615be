"""`runtop serve PATH`: the TUI in a browser, through textual-serve, when SSH to
the training box is not at hand.

textual-serve has no authentication: whoever reaches the port drives the app. So it binds
127.0.0.1 unless told otherwise (and says so when told), every session is read-only unless
`--allow-actions`, and actions are refused outright on an address other machines reach. The
README shows the safe way from a laptop: `ssh -L 8765:127.0.0.1:8765 box` then the browser.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import sys

from runtop.cli import EXIT_USAGE, _err
from runtop.discovery import discover


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_command(path: str, args: argparse.Namespace) -> str:
    """The command textual-serve runs for each browser session: the TUI on the run,
    `--read-only` unless actions were allowed."""
    argv = [sys.executable, "-m", "runtop", "tui", os.path.abspath(path), "--interval", str(args.interval)]
    if not args.allow_actions:
        argv.append("--read-only")
    if args.config:
        argv += ["--config", os.path.abspath(args.config)]
    return shlex.join(argv)


def cmd_serve(args: argparse.Namespace) -> int:
    discover(args.path)  # a path runtop cannot read fails here, in one line, not in the browser
    if not loopback(args.host):
        if args.allow_actions:
            _err(f"--allow-actions is refused on {args.host}: textual-serve has no authentication; "
                 "serve on 127.0.0.1 and reach it with ssh -L")
            return EXIT_USAGE
        _err(f"warning: serving on {args.host}: textual-serve has no authentication, anyone who reaches "
             f"{args.host}:{args.port} sees this run (read-only); ssh -L to 127.0.0.1 is the safe way")
    try:
        from textual_serve.server import Server
    except ImportError:
        _err("runtop serve needs textual-serve: pip install '.[serve]' in runtop's checkout")
        return EXIT_USAGE
    mode = "actions allowed" if args.allow_actions else "read-only"
    print(f"runtop: serving {args.path} ({mode}) on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    Server(serve_command(args.path, args), host=args.host, port=args.port, title=f"runtop {os.path.basename(os.path.abspath(args.path))}").serve()
    return 0
