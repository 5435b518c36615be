"""The screen as plain text (for tests and for looking at a layout from a shell)."""

from __future__ import annotations


def screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip).rstrip() for strip in strips)
