"""The door's lock (docs/design.md, "`runtop serve`: a door with a lock"): which addresses only
this machine reaches, and the token's file, made for the token alone and gone with the server
that made it. `runtop serve` and `runtop mcp --http` share them."""

from __future__ import annotations

import contextlib
import ipaddress
import os


def loopback(host: str) -> bool:
    """An address only this machine reaches (a name too: `localhost`)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def write_token(path: str, token: str) -> tuple[int, int] | str:
    """Create `path` for the token alone: 0600, exclusively (never through a link or over a
    file someone left there). (device, inode) of the file, or why not."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return f"--token-file {path} exists: each start makes a new token; remove it first"
    except OSError as e:
        return f"--token-file {path}: {e.strerror or e}"
    try:
        os.write(fd, (token + "\n").encode("ascii"))
        st = os.fstat(fd)
        return st.st_dev, st.st_ino
    finally:
        os.close(fd)


def remove_token(path: str, ident: tuple[int, int]) -> None:
    """The token dies with this serve: its file goes, if it is still the one written."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == ident:
            os.unlink(path)
