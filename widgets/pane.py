"""`Pane`: a bordered Static that repaints only when its slice of the view changed."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from textual.widgets import Static

from runtop.view import View


class Pane(Static):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    Pane {
        border: round $primary-darken-2;
        border-title-color: $text-muted;
        padding: 0 1;
        height: auto;
    }
    """
    TITLE = ""

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self.border_title = self.TITLE
        self._sig: object = object()

    def signature(self, view: View) -> object:
        """What this pane's picture depends on; equal signatures skip the repaint (DESIGN.md)."""
        raise NotImplementedError

    def render_view(self, view: View) -> RenderableType:
        raise NotImplementedError

    def update_view(self, view: View) -> bool:
        sig = self.signature(view)
        if sig == self._sig:
            return False
        self._sig = sig
        self.update(self.render_view(view))
        return True
