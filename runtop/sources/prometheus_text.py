"""Scraping a Prometheus text endpoint the run serves (vLLM's `/metrics`, the trainer's):
one bounded fetch and one reading of its samples, for every probe that asks one.

The fetch bounds each socket wait and the whole body: an endpoint that drips a byte every
0.5 s never times out a single read, and a stranger on the port cannot fill memory.
"""

from __future__ import annotations

import time

MAX_BODY = 4 << 20


def scrape(url: str, timeout: float = 1.0, total: float = 3.0) -> tuple[str | None, str | None]:
    """(text, None) or (None, why not): unreachable, slow, or not HTTP."""
    # Imported here: a one-shot `runtop status` scrapes nothing, and http.client with its email
    # parser cost it ~0.1 s of start-up under load (docs/design.md, "Start-up").
    import http.client
    import urllib.error
    import urllib.request

    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - a URL the user or the run's config gave
            parts: list[bytes] = []
            size = 0
            while size < MAX_BODY:
                if time.monotonic() - t0 > total:
                    return None, f"slow: gave up after {total:g} s ({size} bytes of the answer so far)"
                chunk = resp.read1(65536)
                if not chunk:
                    break
                parts.append(chunk)
                size += len(chunk)
            return b"".join(parts).decode("utf-8", "replace"), None
    except TimeoutError:
        return None, f"slow: gave up after {timeout:g} s without a byte"
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, TimeoutError):
            return None, f"slow: gave up after {timeout:g} s without an answer"
        return None, f"unreachable: {reason}"


def samples(text: str) -> dict[str, list[float]]:
    """Every sample's value, by metric name (all label sets); ValueError for text that is not
    Prometheus exposition format."""
    from prometheus_client.parser import text_string_to_metric_families  # lazily: startup time

    found: dict[str, list[float]] = {}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                found.setdefault(s.name, []).append(float(s.value))
    except (ValueError, TypeError, IndexError) as e:
        raise ValueError(f"not Prometheus text: {e}") from None
    return found
