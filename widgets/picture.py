"""What a pane's content looks like, as a value: two contents with equal fingerprints draw the
same picture, so the second is not handed to Textual (composing and styling the lines of a
changed widget is most of the TUI's CPU while it tails a busy run; docs/design.md).

Known shapes only: a string, Rich `Text` (its characters, spans and every setting that changes
how it draws), and Rich's tables, columns, rows, groups and styles taken field by field from
their own attributes, so a field added to them is compared too. Anything else has no
fingerprint (None): it is always drawn."""

from __future__ import annotations

from typing import Any

from rich.box import Box
from rich.console import Group
from rich.padding import Padding
from rich.style import Style
from rich.table import Column, Row, Table
from rich.text import Span, Text

MAX_DEPTH = 8
# Rich's own objects whose every attribute is a field of the picture.
_FIELDWISE = (Table, Column, Row, Padding)


class _Unknown(Exception):
    """A part of the content with no fingerprint: the whole is drawn."""


def fingerprint(content: object) -> object | None:
    try:
        picture: object = _fp(content, 0)
        return picture
    except _Unknown:
        return None


def _fp(x: object, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _Unknown
    if x is None or isinstance(x, (str, int, float, bool, Style, Box, Span)):
        return x  # values, compared by value (a box by its characters)
    if isinstance(x, Text):
        return ("Text", x.plain, tuple(x.spans), _fp(x.style, depth + 1), x.justify, x.overflow, x.no_wrap, x.end, x.tab_size)
    if isinstance(x, (list, tuple)):
        return tuple(_fp(i, depth + 1) for i in x)
    if isinstance(x, Group):
        return ("Group", _fp(list(x.renderables), depth + 1), x.fit)
    if type(x) in _FIELDWISE:
        return (type(x).__name__, tuple((k, _fp(v, depth + 1)) for k, v in sorted(vars(x).items())))
    raise _Unknown
