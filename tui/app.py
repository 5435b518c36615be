"""The runtop app: every pane on one `View`, refreshed from one engine worker.

Large terminals show all panes; an 80×24 tmux split gets the compact layout (header,
sparklines, alerts and one switchable pane). No mouse is needed, nothing blocks the
UI loop (all I/O is in the engine's thread), and a pane repaints only when its slice
of the view changed, so a quiet run costs almost nothing over SSH.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from functools import partial
from typing import Any

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import get_current_worker

from runtop.actions.vetted import REGISTRY as ACTIONS
from runtop.engine.engine import Engine
from runtop.fleet.runs import BACK
from runtop.frameworks.layout import RunLayout
from runtop.outputs.terminal_notify import osc, tmux_message
from runtop.parsers.hygiene import mask, shown
from runtop.tui.alerts_screen import AlertsScreen
from runtop.tui.app_css import APP_CSS
from runtop.tui.chart_screen import ChartScreen
from runtop.tui.fit import fit_column, toast_text
from runtop.tui.help_screen import HelpScreen
from runtop.tui.keys import PANES, bindings, help_rows, palette_entries
from runtop.tui.log_keys import LogKeys
from runtop.tui.panes import PANE_SPECS, placed, spec, widget
from runtop.tui.vetted import VettedActions
from runtop.view.view import View
from runtop.widgets.health_header import HealthHeader
from runtop.widgets.metric_sparklines import logged
from runtop.widgets.pane import Pane
from runtop.widgets.process_tree import ProcessTree

COMPACT_WIDTH, COMPACT_HEIGHT = 120, 40
MIN_STEP_S = 0.25  # floor for --interval: the engine never reads and repaints more often


class StateChanged(Message):
    """The engine read something new. Latest wins: a burst of them is one repaint."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StateChanged)




def lower_priority() -> None:
    """Nice the engine's thread: on a busy machine the scheduler then favours the thread
    that answers keys (Linux schedules threads apart; elsewhere this does nothing)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        return  # not Linux, or not permitted: the engine keeps the app's priority


class RuntopApp(VettedActions, LogKeys, App[int]):
    TITLE = "runtop"
    BINDINGS = bindings()
    CSS = APP_CSS

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette lists runtop's own commands first (from the one key table), then Textual's."""
        for title, help_text, action in palette_entries():
            yield SystemCommand(title, help_text, partial(self.run_action, action))
        yield from super().get_system_commands(screen)

    def notify(self, message: str, *, title: str = "", markup: bool = False, **kw: Any) -> None:
        """Every toast shows run text (a finding, an error): controls and secrets masked, and
        no Rich markup read from it."""
        message, title = mask(str(message)), mask(str(title))
        self.toasts.append(message + title)
        super().notify(toast_text(message, bool(title), self._term or self.size), title=title, markup=markup, **kw)

    def __init__(
        self,
        layout: RunLayout,
        *,
        interval: float = 2.0,
        monitor: Engine | None = None,
        quit_after: float | None = None,
        fleet: bool = False,
        read_only: bool = False,
        visitor: bool = False,
        action_options: dict[str, Any] | None = None,
        terminal_notify: bool = False,
        no_launcher: str | None = None,
        **monitor_options: Any,
    ) -> None:
        """`monitor_options` go to `Engine` (poll, gpu, vllm_url, thresholds, samplers, clock);
        `action_options` to `runtop.actions.vetted.Context` (tmux, session, window, launch_cmd, …)."""
        super().__init__()
        self.read_only = read_only or visitor
        # A `runtop serve` session without --allow-actions: nothing runs (no py-spy), nothing is
        # written (no forensics, no records in the run dir), on top of read-only.
        self.visitor = visitor
        self.terminal_notify = terminal_notify  # OSC 777/9 and tmux display-message on a critical incident
        self.no_launcher = no_launcher  # why no action can reach a Launcher pane here (the demo's), or None
        self.action_options = action_options or {}
        self._confirming = False
        if action_options is not None and "launcher" not in monitor_options:
            monitor_options["launcher"] = self._capture_launcher
        self.quit_after = quit_after  # `runtop demo --duration`: leave by itself
        self.fleet = fleet  # opened from the runs table: Esc goes back to it (exit result BACK)
        self.interval = interval
        self.toasts: list[str] = []  # every toast shown, masked (tests read it, not Textual's internals)
        self.monitor = monitor or Engine(layout, interval=interval, **monitor_options)
        self.slot = "steps"  # the compact layout's switchable pane
        self._slot_chosen = False  # the user picked the slot (a number key): runtop no longer does
        self.metric = "reward"  # the metric `c` charts
        self._forensics_told: object = None
        self.hidden: set[str] = set()
        self._stop = False
        # Set while no engine step runs: `q` waits for it, a few seconds at most (runtop.cli.live).
        self.engine_idle = threading.Event()
        self.engine_idle.set()
        self._term: Size | None = None  # the terminal's size as the last resize gave it

    # ---- layout -------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # Every pane from the one registry (tui/panes.py), in its place.
        for p in placed("header"):
            yield widget(p)
        with Horizontal(id="top"):
            for p in placed("top"):
                yield widget(p)
        with Horizontal(id="body"):
            for column in ("left", "right"):
                with Vertical(id=column):
                    for p in placed(column):
                        yield widget(p)
        for p in placed("bottom"):
            yield widget(p)
        yield Footer()

    def on_mount(self) -> None:
        # Built once and kept: `?` then only shows it (composing it anew took most of a key's latency).
        self.install_screen(HelpScreen(help_rows(self.no_launcher)), name="help")
        # The header's next step names its key: from the one key table (actions and panes).
        # An action that cannot act here (no Launcher pane) is not named as the way to the next step.
        acting = [a for a in ACTIONS if self.no_launcher is None or a.name == "checkin"]
        self.query_one(HealthHeader).keys = {a.name: a.key for a in acting} | {p.id: p.key for p in PANE_SPECS if p.key}
        # The directory the user named (the runs table's row name), else the one the run's files are in.
        given = self.monitor.layout.given
        where = (given if given and os.path.isdir(given) else self.monitor.layout.root).rstrip(os.sep)
        self.query_one(HealthHeader).dir_name = shown(os.path.basename(where) or where)
        for p in PANE_SPECS:
            w = self.query_one(f"#{p.id}")
            if isinstance(w, Pane) and p.key:
                w.zoom_key = p.key  # a pane cut short names the key that shows it whole
        self._apply_layout()
        self.refresh_panes()
        self.run_engine()
        if self.quit_after is not None:
            self.set_timer(self.quit_after, self.exit)

    def on_resize(self, event: events.Resize) -> None:
        # The event carries the new size; `self.size` may still be the old one while it is
        # handled (the layout was one resize behind).
        self._term = event.size
        self._apply_layout()
        # Once the new layout has sizes, the panes whose size changed draw themselves again.
        self.call_after_refresh(self.refresh_panes)

    @property
    def compact(self) -> bool:
        size = self._term or self.size
        return size.width < COMPACT_WIDTH or size.height < COMPACT_HEIGHT

    def _apply_layout(self) -> None:
        self.screen.set_class(self.compact, "-compact")
        self.screen.set_class((self._term or self.size).height < 50, "-short")
        for _key, pid, _title in PANES:
            w = self.query_one(f"#{pid}")
            w.set_class(pid == self.slot, "-slot")
            w.set_class(pid in self.hidden and not self.compact, "-hidden")
        holds = False
        for col in ("#left", "#right"):
            c = self.query_one(col)
            has = any(ch.id == self.slot for ch in c.children)
            c.set_class(has, "-has-slot")
            holds |= has
        # The compact slot is a bottom pane (the logs): the empty body gives it every row.
        self.query_one("#body").set_class(not holds, "-empty")
        self.call_after_refresh(self._fit_columns)

    # ---- engine -------------------------------------------------------------
    @work(thread=True, exclusive=True, group="engine", name="engine")
    def run_engine(self) -> None:
        worker = get_current_worker()
        mon = self.monitor
        lower_priority()
        self.engine_idle.clear()
        try:
            while not worker.is_cancelled and not self._stop:
                t0 = time.monotonic()
                if mon.step():
                    self.post_message(StateChanged())
                # One read and one repaint per interval, however fast the logs grow: a burst of
                # lines is one update (docs/design.md: --interval governs the whole app). Waiting in
                # slices keeps quitting prompt.
                deadline = t0 + max(self.interval, MIN_STEP_S)
                while not worker.is_cancelled and not self._stop and time.monotonic() < deadline:
                    mon.wait(min(0.25, max(0.01, deadline - time.monotonic())))
        finally:
            self.engine_idle.set()

    def on_state_changed(self, _msg: StateChanged) -> None:
        if self._confirming:
            return  # the screen holds still while the user reads the exact text they will send
        self.refresh_panes()
        self._said_forensics()
        new = self.monitor.take_new_findings()
        critical = [f for f in new if f.severity == "critical"]
        if critical:
            # One toast on screen, the newest incident's gravest: stacked toasts covered two thirds
            # of an 80×24 screen. The others are in the alerts pane, counted in the title.
            top = min(critical, key=lambda f: not f.down)
            others = sum(1 for a in self.monitor.verdict.alerts if a.severity == "critical") - 1
            more = f" (+{others} more in alerts)" if others > 0 else ""
            self.clear_notifications()
            self.notify(top.message, title=f"{top.rule}{more}", severity="error", timeout=15)
        if critical and self.monitor.health.cfg.bell:
            self.bell()
        if critical and self.terminal_notify:
            self._page_terminal(critical[0].message)

    def _page_terminal(self, message: str) -> None:
        """A desktop notification through the terminal (as `bell` writes its BEL, through the
        driver, between frames) and a message to every client of the tmux runtop runs in."""
        title = f"runtop: {os.path.basename(self.monitor.layout.root.rstrip('/'))} is {self.monitor.verdict.verdict}"
        if not self.is_headless and self._driver is not None:
            self._driver.write(osc(title, message))
        threading.Thread(target=tmux_message, args=(f"{title}: {message}",), daemon=True).start()

    def _said_forensics(self) -> None:
        done = self.monitor.last_forensics
        if done is not None and done is not self._forensics_told:
            self._forensics_told = done
            self.notify(done.line(), title="hang forensics saved", severity="warning", timeout=20)

    def _follow_verdict(self) -> None:
        """The compact slot shows what the verdict asks to read: the logs while the
        run is Down or Degraded (the traceback, the retries), the steps otherwise; until the
        user picks a pane with a number key."""
        if self._slot_chosen:
            return
        verdict = self.monitor.view().verdict.verdict
        slot = "logs" if verdict in ("Down", "Degraded") else "steps"
        if slot != self.slot:
            self.slot = slot
            self._apply_layout()

    def view(self) -> View:
        return self.monitor.view()

    def refresh_panes(self) -> None:
        # The newest frozen view, taken without a lock: the engine may be mid-read, and a
        # pane still never sees a half-applied poll.
        if self._stop:
            return  # the engine's last message can arrive after the panes are gone
        try:
            self._follow_verdict()
            view = self.monitor.view()
            self.sync_resume_key(view.state)
            for p in PANE_SPECS:
                self.query_one(f"#{p.id}").update_view(view)  # type: ignore[attr-defined]
            self._fit_columns()
        except NoMatches:
            return  # the app is closing: its screen's panes are already being removed

    def _fit_columns(self) -> None:
        """Each pane of the full layout's columns its rows (tui/fit.py); the compact layout and
        a zoomed pane size themselves by CSS."""
        full = not self.compact and self.screen.maximized is None
        for col in ("#left", "#right"):
            fit_column(self.query_one(col), full)

    def on_unmount(self) -> None:
        self._stop = True
        self.monitor.close()

    # ---- actions --------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen("help")

    def action_pane(self, pid: str) -> None:
        if self.compact and spec(pid).slot:
            self._slot_chosen = True
            self.slot = pid
            self._apply_layout()
            return
        widget = self.query_one(f"#{pid}")
        if self.screen.maximized is widget:
            self.screen.minimize()
            self._apply_layout()
        else:
            self.hidden.discard(pid)
            if spec(pid).slot:
                self._slot_chosen = True
                self.slot = pid
            self.screen.maximize(widget, container=False)
            self._apply_layout()

    def action_hide_pane(self) -> None:
        if not self.compact:
            self.hidden.add(self.slot)
            self._apply_layout()

    def action_show_all(self) -> None:
        self.hidden.clear()
        self._apply_layout()

    def action_forensics(self) -> None:
        """Hang forensics in the engine's thread of their own; a toast says where they went."""
        if self.visitor:
            self.notify("read-only: forensics are off here (they run py-spy and write into the run dir)", timeout=5)
        elif self.monitor.start_forensics():
            self.notify("collecting hang forensics (py-spy stacks, process states, log tails)…", title="forensics", timeout=5)
        else:
            self.notify("forensics are being collected already", title="forensics", timeout=5)

    def action_alerts(self) -> None:
        """Every alert whole: message, cause, reporter, phase, evidence, since, next step."""
        self.push_screen(AlertsScreen(self.monitor.view(), self.query_one(HealthHeader).keys))

    def action_chart(self) -> None:
        self.push_screen(ChartScreen(self.view, self.metric), self._charted)

    def _charted(self, metric: str | None) -> None:
        if metric:
            self.metric = metric  # the chart opens on the metric last looked at

    def action_next_metric(self) -> None:
        names = logged(self.monitor.view()) or ["reward"]
        i = names.index(self.metric) + 1 if self.metric in names else 0
        self.metric = names[i % len(names)]

    def action_sort_processes(self) -> None:
        order = self.query_one(ProcessTree).cycle_sort()
        self.notify(f"processes by {order}", timeout=2)

    def action_go_back(self) -> None:
        """Esc: a zoomed pane first; then, opened from a fleet, back to the runs table."""
        if self.screen.maximized is not None:
            self.screen.minimize()
            self._apply_layout()
        elif self.fleet:
            self.exit(BACK)

    def action_refresh(self) -> None:
        self.refresh_panes()
