"""Render the pinned screens (tests/live/__snapshots__/…/*.svg) to PNG, to look at them as a user would.

    python benchmarks/screens.py [OUT_DIR]      (default /tmp/runtop-screens)

The snapshot tests pin the main layout at 80×24, 120×40 and 200×50 for a healthy, a
dead (trainer OOM), a finished and a stalled run, plus SkyRL's; `pytest tests/live/test_snapshots.py
--snapshot-update` rewrites them. Needs cairosvg (`pip install cairosvg`), which the tests do not.
"""

from __future__ import annotations

import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOTS = os.path.join(os.path.dirname(HERE), "tests", "live", "__snapshots__", "test_snapshots")


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/runtop-screens"
    try:
        import cairosvg  # type: ignore[import-not-found]
    except ImportError:
        print("screens: needs cairosvg: pip install cairosvg", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    svgs = sorted(glob.glob(os.path.join(SNAPSHOTS, "*.svg")))
    for svg in svgs:
        png = os.path.join(out, os.path.basename(svg)[:-4].replace("[", "-").replace("]", "") + ".png")
        cairosvg.svg2png(url=svg, write_to=png)
        print(png)
    print(f"{len(svgs)} screens in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
