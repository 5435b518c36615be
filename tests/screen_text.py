"""The screen as plain text (for tests and for looking at a layout from a shell).

Read from Textual's public `App.export_screenshot()` (an SVG), not from its compositor:
each run of text is a `<text>` element on a line (`terminal-line-N`) at a pixel offset
of whole character cells.
"""

from __future__ import annotations

import html
import re

_TEXT = re.compile(r'<text class="terminal-[^"]*" x="([\d.]+)" y="[\d.]+" textLength="([\d.]+)" clip-path="url\(#terminal-(?:\d+-)?line-(\d+)\)">([^<]*)</text>')
CELL_PX = 12.2  # Rich's SVG export: one character cell is 12.2 px wide, column 0 at x = 0


def screen_text(app) -> str:
    width, height = app.size
    grid = [[" "] * width for _ in range(height)]
    svg = app.export_screenshot()
    for x, _length, line, text in _TEXT.findall(svg):
        row = int(line)
        col = round(float(x) / CELL_PX)
        if not 0 <= row < height:
            continue
        for i, ch in enumerate(html.unescape(text).replace("\xa0", " ")):
            if 0 <= col + i < width:
                grid[row][col + i] = ch
    return "\n".join("".join(r).rstrip() for r in grid)
