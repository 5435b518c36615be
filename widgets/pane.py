"""`Pane`: a bordered Static that repaints only when the slices of the view it reads changed."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from runtop.parsers.hygiene import mask
from runtop.view.view import Slice, View
from runtop.widgets.picture import fingerprint


class SafeStatic(Static):
    """A Static whose every update passes `masked`: the one chokepoint between run text and
    the terminal. Every widget that shows run text is one of these."""

    _picture: object | None = None

    def update(self, content: RenderableType = "", *, layout: bool = True) -> None:  # type: ignore[override]
        content = masked(content)
        picture = fingerprint(content)
        if picture is not None and picture == self._picture:
            return  # the same picture: Textual would compose and style every line again for nothing
        self._picture = picture
        super().update(content, layout=layout)


class Pane(SafeStatic):
    ALLOW_MAXIMIZE = True  # number keys zoom a pane
    DEFAULT_CSS = """
    Pane {
        border: round $primary-darken-2;
        border-title-color: $text-muted;
        padding: 0 1;
        height: auto;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """
    TITLE = ""
    # The slices of the view this pane draws from (`runtop.view.publish.Slice`): it repaints when
    # one of their versions moves, or its size does. Nothing else decides (the
    # hand-written signatures each pane kept missed changes and repainted on noise).
    READS: tuple[Slice, ...] = ()

    def __init__(self, **kw: Any) -> None:
        super().__init__("", **kw)
        self.border_title = self.TITLE
        self._sig: object = object()
        self._height: int | None = None
        self._view: View | None = None  # the last view drawn: a resize (a zoom) redraws it
        # Lines the pane's content takes unclipped (what the column fitter in tui/fit.py asks
        # room for), and whether its height is the fitter's to set (then what does not fit
        # ends in "… N more" instead of running under the border).
        self.natural: int | None = None
        self.fitted = False
        self.zoom_key = ""  # the number key that shows this pane whole (the app sets it)
        # Set by a pane that fitted its content to `room` itself: the lines it would take whole.
        self.wants: int | None = None

    @property
    def room(self) -> int | None:
        """Lines inside the border the pane may fill, where the fitter sized it; else None."""
        if not self.fitted or not self.size.height:
            return None
        return self.size.height  # the content region: the border and padding are outside it

    def on_resize(self) -> None:
        # Zooming a pane changes its size and nothing else: it must not wait for the run to
        # write before it fills the screen.
        if self._view is not None:
            self.update_view(self._view)

    def render_view(self, view: View) -> RenderableType:
        raise NotImplementedError

    def update_view(self, view: View) -> bool:
        # The size is the base class's business: a pane that fits its text to its
        # width must repaint when the width changes, whatever its own signature says (the
        # header drew before layout at a guessed width and kept it).
        self._view = view
        sig = (versions(view, self.READS), self.size)
        if sig == self._sig:
            return False
        self._sig = sig
        self.wants = None
        content = self.render_view(view)
        if isinstance(content, Text):
            content.no_wrap, content.overflow = True, "ellipsis"  # one line per line: the height is known
        height = _height(content)
        self.natural = self.wants or height
        room = self.room
        if room is not None and height is not None and height > room:
            content, height = Clipped(masked(content), room, self.zoom_key), room
        # A layout pass re-renders the whole screen; skip it when the pane keeps its height
        # (docs/design.md: repaint only what changed; this is most of the TUI's CPU on a busy run).
        self.update(content, layout=height is None or height != self._height)
        self._height = height
        return True


def titled(widget: Widget, title: str, subtitle: str | None = None) -> None:
    """Set `widget`'s border title (and subtitle, when given) where it changed: Textual parses
    the markup and repaints the whole widget at every assignment, so a pane that said its title
    again at every view was repainted with nothing new (the process tree, every interval; the
    GPU pane's and the step table's titles undid their same-picture skip)."""
    if title != getattr(widget, "_title_said", None):
        widget._title_said = title  # type: ignore[attr-defined]
        widget.border_title = title
    if subtitle is not None and subtitle != getattr(widget, "_subtitle_said", None):
        widget._subtitle_said = subtitle  # type: ignore[attr-defined]
        widget.border_subtitle = subtitle


def versions(view: View, reads: tuple[Slice, ...]) -> tuple[int, ...]:
    """The versions of `reads` in `view`: equal tuples mean an equal picture."""
    return tuple(view.versions[s] for s in reads)


def masked(content: RenderableType) -> RenderableType:
    """`content` with controls and secrets masked, at the same length so styles stay put."""
    if isinstance(content, str):
        return mask(content)
    if isinstance(content, Text):
        plain = content.plain
        safe = mask(plain)
        if safe != plain:
            content.plain = safe
        return content
    if isinstance(content, Table):
        for col in content.columns:
            col._cells[:] = [masked(c) for c in col._cells]  # Rich keeps cells here
        return content
    if isinstance(content, Group):
        content.renderables[:] = [masked(r) for r in content.renderables]
        return content
    return content


def _height(content: RenderableType) -> int | None:
    """Lines `content` renders to: panes draw one line per row and never wrap (`text-wrap: nowrap`)."""
    if isinstance(content, Text):
        return content.plain.count("\n") + 1
    if isinstance(content, Table):
        return content.row_count + (1 if content.show_header else 0)
    if isinstance(content, Group):
        parts = [_height(r) for r in content.renderables]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)
    return None


class Clipped:
    """`content` cut to `lines` lines, the last saying how many more there are: a pane the
    column has too little room for keeps its border whole and says what it left out."""

    def __init__(self, content: RenderableType, lines: int, key: str = "") -> None:
        self.content, self.lines, self.key = content, lines, key

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        opts = options.update(height=None)
        rendered = console.render_lines(self.content, opts, pad=False)
        keep = rendered[: self.lines - 1]
        more = len(rendered) - len(keep)
        for line in keep:
            yield from line
            yield Segment.line()
        note = f"… {more} more" + (f" ({self.key} zooms)" if self.key else "")
        yield Segment(note[: options.max_width], console.get_style("grey62 italic"))
