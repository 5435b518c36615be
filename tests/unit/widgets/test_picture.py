"""A pane handed the picture it already shows is not drawn again, and any change to what it
shows (a character, a style, a cell, a column's or a row's setting) is drawn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from rich import box
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult

from runtop.widgets.pane import SafeStatic, titled
from runtop.widgets.picture import fingerprint


def table(**change: object) -> Table:
    t = Table(show_header=bool(change.get("header", True)), box=change.get("box", box.SIMPLE))  # type: ignore[arg-type]
    t.add_column("pid", justify=change.get("justify", "right"), style=change.get("col_style", "cyan"))  # type: ignore[arg-type]
    t.add_column("role")
    t.add_row("4101", Text("trainer", style=change.get("cell_style", "green")), style=change.get("row_style"))  # type: ignore[arg-type]
    t.add_row(str(change.get("pid", "4102")), "inference")
    return t


def text(**change: object) -> Text:
    t = Text(str(change.get("plain", "Healthy · step 412/1000")), style=str(change.get("style", "bold")))
    t.stylize(str(change.get("span_style", "green")), 0, int(change.get("span_end", 7)))  # type: ignore[call-overload]
    t.no_wrap = bool(change.get("no_wrap", True))
    return t


CHANGES: list[tuple[str, Callable[..., object], dict[str, object]]] = [
    ("a character", text, {"plain": "Healthy · step 413/1000"}),
    ("the base style", text, {"style": "italic"}),
    ("a span's style", text, {"span_style": "red"}),
    ("a span's end", text, {"span_end": 6}),
    ("wrapping", text, {"no_wrap": False}),
    ("a cell", table, {"pid": "4103"}),
    ("a cell's style", table, {"cell_style": "red"}),
    ("a column's style", table, {"col_style": "magenta"}),
    ("a column's justification", table, {"justify": "left"}),
    ("a row's style", table, {"row_style": "on red"}),
    ("the header shown", table, {"header": False}),
    ("the box", table, {"box": box.ROUNDED}),
    ("a group's part", lambda **c: Group(text(**c), table()), {"plain": "Down"}),
]


@pytest.mark.parametrize(("what", "make", "change"), CHANGES, ids=[c[0] for c in CHANGES])
def test_the_same_picture_built_twice_is_the_same_and_any_change_is_another(what, make, change):
    first = fingerprint(make())
    assert first is not None and first == fingerprint(make())
    assert fingerprint(make(**change)) != first, what


def test_a_renderable_of_no_known_shape_has_no_fingerprint_and_is_always_drawn():
    assert fingerprint(Panel("x")) is None
    assert fingerprint(Group(Text("a"), Panel("x"))) is None


class Counted(SafeStatic):
    """A pane that counts the times it is refreshed (each one repaints it whole)."""

    drawn = 0

    def refresh(self, *a: object, **k: object) -> Counted:
        self.drawn += 1
        return super().refresh(*a, **k)  # type: ignore[arg-type]


class Host(App[None]):
    """One counted pane, `#p`, bordered so its title shows."""

    CSS = "Counted { border: round white; height: auto; }"

    def compose(self) -> ComposeResult:
        yield Counted("body", id="p")


def test_a_pane_given_its_own_picture_again_is_not_redrawn_and_a_new_one_is():
    async def go() -> None:
        async with Host().run_test() as pilot:
            p = pilot.app.query_one("#p", Counted)
            p.update(table(), layout=False)
            before = p.drawn
            p.update(table(), layout=False)
            assert p.drawn == before  # the same picture
            p.update(table(pid="4109"), layout=False)
            assert p.drawn > before
            await pilot.pause()
            assert "4109" in pilot.app.export_screenshot()  # and the screen shows it

    asyncio.run(go())


def test_a_pane_that_says_its_title_again_is_not_redrawn_and_a_new_title_is_on_its_border():
    """The process tree said its title at every view: each one repainted the whole pane."""
    async def go() -> None:
        async with Host().run_test() as pilot:
            p = pilot.app.query_one("#p", Counted)
            titled(p, "procs", "by cpu")
            before = p.drawn
            titled(p, "procs", "by cpu")
            assert p.drawn == before  # the same title and subtitle
            titled(p, "procs · by mem (o)")
            assert p.drawn > before
            await pilot.pause()
            shot = pilot.app.export_screenshot().replace("&#160;", " ")
            assert "procs · by mem (o)" in shot and "by cpu" in shot  # the subtitle stays

    asyncio.run(go())
