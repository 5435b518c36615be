"""The run's process tree: roles recognised by title, CPU%, RSS, age, state; missing or
zombie roles in red (a dead inference server while the trainer waits is the quiet death of
docs/incidents.md#vllm-dies-silently)."""

from __future__ import annotations

from rich.console import Group, JustifyMethod
from rich.table import Table
from rich.text import Text

from runtop.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import duration, human_bytes

ROLE_STYLE = {"trainer": "magenta", "orchestrator": "cyan", "generator": "cyan", "inference": "blue", "env": "green", "launcher": "white", "ray": "grey62"}
MAX_ROWS = 40


class ProcessTree(Pane):
    TITLE = "processes"
    READS = (Slice.PROCESS, Slice.SLURM, Slice.RAY, Slice.TRAINER, Slice.CLOCK)

    def render_view(self, view: View) -> Table | Text | Group:
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
        title_w = max(12, (self.size.width or 80) - 46)
        t = Table.grid(padding=(0, 1))
        cols: tuple[tuple[str, JustifyMethod], ...] = (
            ("pid", "right"), ("role", "left"), ("title", "left"), ("st", "left"), ("cpu", "right"), ("rss", "right"), ("age", "right"),
        )
        # Numbers keep their width; the title takes what is left (at 120×40 the
        # pids and CPU were cut to "41…" while the title kept its columns).
        min_w = {"pid": 7, "st": 3, "cpu": 4, "rss": 6, "age": 6}
        for col, just in cols:
            t.add_column(
                col, justify=just, no_wrap=True, min_width=min_w.get(col), overflow="ellipsis",
                max_width=title_w if col == "title" else None, ratio=1 if col == "title" else None,
            )
        if head:
            # The missing roles go first, in the title column, so the pane stays one plain table.
            t.add_row("", "", head, "", "", "", "")
        for p in snap.procs[:MAX_ROWS]:
            bad = p.zombie
            style = "bold red" if bad else ROLE_STYLE.get(p.role or "", "grey62")
            t.add_row(
                str(p.pid),
                Text(p.role or "", style=style),
                Text("  " * p.depth + p.title, style="red" if bad else ""),
                Text(p.status[:3], style="red" if bad else "grey62"),
                "" if p.cpu_pct is None else f"{p.cpu_pct:.0f}%",
                human_bytes(p.rss) if p.rss else "",
                duration(view.now - p.create_time),
            )
        if len(snap.procs) > MAX_ROWS:
            t.add_row("", "", Text(f"… {len(snap.procs) - MAX_ROWS} more", style="grey62"), "", "", "", "")
        return t


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
