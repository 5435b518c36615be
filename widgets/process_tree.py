"""The run's process tree: roles recognised by title, CPU%, RSS, age, state; missing or
zombie roles in red (a dead inference server while the trainer waits is the quiet death of
docs/incidents.md#vllm-dies-silently). Where the pane is wide enough, each role's CPU and
resident memory over time (the engine's `runtop.view.history`) as sparklines on the role's first
row; `o` orders the table by tree, CPU, memory or age."""

from __future__ import annotations

from typing import Any

from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from runtop.view.view import ProcInfo, Slice, View
from runtop.widgets.pane import Pane, titled
from runtop.widgets.render import duration, human_bytes, sparkline

ROLE_STYLE = {"trainer": "magenta", "orchestrator": "cyan", "generator": "cyan", "inference": "blue", "env": "green", "launcher": "white", "ray": "grey62"}
MAX_ROWS = 40


# What `o` orders the table by, in turn: the tree (parents above their children), then the
# busiest, the largest, the oldest first. nvitop's and htop's way.
SORTS = ("tree", "cpu", "rss", "age")
SPARK_MIN = 6  # a history column narrower than this is left out


class ProcessTree(Pane):
    TITLE = "processes"
    READS = (Slice.PROCESS, Slice.SLURM, Slice.RAY, Slice.TRAINER, Slice.CLOCK)

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.sort = "tree"

    def cycle_sort(self) -> str:
        """The next order (`o`); the pane repaints at once."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._sig = object()
        if self._view is not None:
            self.update_view(self._view)
        return self.sort

    def render_view(self, view: View) -> Table | Text | Group:
        titled(self, self.TITLE if self.sort == "tree" else f"{self.TITLE} · by {self.sort} (o)")
        body = self._table(view)
        head = [line for line in (slurm_line(view), ray_line(view), trainer_line(view)) if line is not None]
        return Group(*head, body) if head else body

    def _table(self, view: View) -> Table | Text:
        snap = view.system.procs
        err = view.system.errors.get("process") or (snap.error if snap else None)
        if snap is None:
            return Text(err or "looking for the run's processes…", style="red" if err else "italic grey62")
        head = Text()
        for role in snap.missing:
            head.append(f"{role} missing  ", "bold red")
        for role in snap.zombie_roles:
            head.append(f"{role} zombie  ", "bold red")
        if err:
            head.append(err, "red")
        if not snap.procs:
            head.append("no process of this run is running" if not head else "", "grey62")
            return head
        procs = ordered(snap.procs, self.sort, view.now)
        inner = max(20, self.size.width or 76)  # the content region, inside the border and padding
        role_w = max((len(p.role or "") for p in procs), default=4)
        title_w = max(len("  " * p.depth + p.title) if self.sort == "tree" else len(p.title) for p in procs)
        cols = columns(inner, role_w, title_w)
        t = Table.grid(padding=(0, 1), expand=True)
        for name in cols:
            just: JustifyMethod = "right" if name in ("pid", "cpu", "rss", "age") else "left"
            t.add_column(name, justify=just, no_wrap=True, overflow="ellipsis", width=cols[name] or None, ratio=1 if name == "title" else None)
        if head:
            # The missing roles go first, in the title column, so the pane stays one plain table.
            t.add_row(*(head if name == "title" else "" for name in cols))
        roles = view.system.history.roles
        drawn: set[str] = set()  # a role's history is drawn once, on its first row
        for p in procs[:MAX_ROWS]:
            bad = p.zombie
            style = "bold red" if bad else ROLE_STYLE.get(p.role or "", "grey62")
            hist = roles.get(p.role or "") if p.role not in drawn else None
            if p.role:
                drawn.add(p.role)
            cells: dict[str, str | Text] = {
                "pid": str(p.pid),
                "role": Text(p.role or "", style=style),
                "title": Text(("  " * p.depth if self.sort == "tree" else "") + p.title, style="red" if bad else ""),
                "st": Text(p.status[:3], style="red" if bad else "grey62"),
                "cpu": "" if p.cpu_pct is None else f"{p.cpu_pct:.0f}%",
                "cpu~": Text(sparkline(list(hist.cpu_pct), cols.get("cpu~", 0), lo=0.0).rjust(cols.get("cpu~", 0)) if hist else "", style="green"),
                "rss": human_bytes(p.rss) if p.rss else "",
                "rss~": Text(sparkline(list(hist.rss), cols.get("rss~", 0), lo=0.0).rjust(cols.get("rss~", 0)) if hist else "", style="magenta"),
                "age": duration(view.now - p.create_time),
            }
            t.add_row(*(cells[name] for name in cols))
        if len(procs) > MAX_ROWS:
            t.add_row(*(Text(f"… {len(procs) - MAX_ROWS} more", style="grey62") if name == "title" else "" for name in cols))
        return t


def ordered(procs: list[ProcInfo], sort: str, now: float) -> list[ProcInfo]:
    """The processes in the order `sort` names: the tree's own, or the largest first."""
    if sort == "cpu":
        return sorted(procs, key=lambda p: -(p.cpu_pct or 0.0))
    if sort == "rss":
        return sorted(procs, key=lambda p: -(p.rss or 0))
    if sort == "age":
        return sorted(procs, key=lambda p: p.create_time)
    return list(procs)


# Columns in the order they are given up when the pane is narrow: the title keeps room for a
# name a researcher recognises (`PRIME-RL::Orchestrator`, not `PRIME-RL:…`), the numbers their
# width (at 120×40 they were cut to `sle` and `11`); the histories come last, then the state and age.
FIXED = {"pid": 7, "cpu": 4, "rss": 6, "st": 3, "age": 6}
TITLE_MIN = 22


def columns(inner: int, role_w: int, title_w: int) -> dict[str, int]:
    """Column name → width (0: the title, which takes what is left), for `inner` columns of text."""
    want = ["pid", "role", "title", "cpu", "rss"]
    optional = [("age", FIXED["age"]), ("st", FIXED["st"]), ("cpu~", 0), ("rss~", 0)]
    widths = {name: FIXED.get(name, role_w) for name in want}
    widths["title"] = 0

    def used(ws: dict[str, int]) -> int:
        return sum(ws.values()) + len(ws) - 1  # one space between columns

    title_room = min(title_w, TITLE_MIN)
    if used(widths) + title_room > inner:
        widths.pop("role")  # the title names the role (`PRIME-RL::Trainer`): it goes first
    for name, w in optional:
        if name.endswith("~"):
            w = max(SPARK_MIN, min(30, (inner - used(widths) - min(title_w, 40)) // 2 - 1))
        if used(widths) + 1 + w + title_room <= inner and (not name.endswith("~") or w >= SPARK_MIN):
            widths[name] = w
    order = ["pid", "role", "title", "st", "cpu", "cpu~", "rss", "rss~", "age"]
    return {name: widths[name] for name in order if name in widths}


JOB_STYLE = {"RUNNING": "green", "COMPLETING": "green", "PENDING": "yellow", "REQUEUED": "yellow", "SUSPENDED": "yellow", "COMPLETED": "grey62"}


def slurm_line(view: View) -> Text | None:
    """The run's SLURM job on one line: on a login node it is all there is to see
    of the run's processes."""
    snap = view.state.slurm
    if snap is None:
        return None
    line = Text()
    line.append("SLURM ", "bold")  # the word alone: a Text's own style would make the whole line bold
    job = snap.job
    if job is None:
        line.append(f"job {snap.ref.job_id}: {'; '.join(snap.notes) or 'no reading'}", "grey62")
        return line
    line.append(f"job {job.job_id} ")
    line.append(job.state_text or job.state.value, JOB_STYLE.get(job.state.value, "bold red"))
    if job.node_count:
        line.append(f" · {job.node_count} node{'s' if job.node_count > 1 else ''}" + (f" {job.nodes}" if job.nodes else ""))
    left = job.time_left()
    if job.state.alive and left is not None:
        line.append(f" · {duration(left)} left", "yellow" if left < 3600 else "")
    if job.reason:
        line.append(f" · {job.reason}", "grey62")
    line.append(f"  ({snap.source})", "grey62")
    return line


def ray_line(view: View) -> Text | None:
    """The run's Ray cluster on one line: nodes, GPUs, actors alive and dead; or why
    its state API gave nothing (the extra not installed, the cluster not answering)."""
    snap = view.state.ray
    if snap is None:
        error = view.system.errors.get("ray")
        return Text(f"Ray: {error}", "grey62") if error else None
    lost = len(snap.lost_nodes())
    line = Text()
    line.append("Ray ", "bold")
    line.append(f"{len(snap.nodes)} node{'s' if len(snap.nodes) != 1 else ''}")
    if lost:
        line.append(f" ({lost} lost)", "bold red")
    line.append(f" · {snap.gpus():g} GPUs · {snap.alive_actors} actors alive")
    if snap.dead:
        line.append(f", {len(snap.dead)} dead", "red")
    line.append(f"  ({snap.how})", "grey62")
    return line


def trainer_line(view: View) -> Text | None:
    """The trainer's own /metrics, where the run's config serves one."""
    live = view.system.trainer
    error = view.system.errors.get("trainer")
    if live is None:
        return Text(error, "grey62") if error else None  # `trainer /metrics at URL: why`
    ago = f", {duration(view.now - live.last_step_ts)} ago" if live.last_step_ts else ""
    return Text(f"trainer /metrics: step {live.step if live.step is not None else '-'}{ago}", "grey62")
