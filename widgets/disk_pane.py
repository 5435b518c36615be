"""Disks the run fills (used/total, growth, time to full), its checkpoints (size, complete?) and core dumps."""

from __future__ import annotations

import os

from rich.table import Table
from rich.text import Text

from runtop.view import Slice, View
from runtop.widgets.pane import Pane
from runtop.widgets.render import bar, duration, human_bytes

MAX_CKPTS = 8


def _short(view: View, path: str) -> str:
    """A path inside (or beside) the run dir, relative to it; anything else in full."""
    rel = view.state.relpath(path)
    return rel if not rel.startswith(("../..", "/")) else path


class DiskPane(Pane):
    TITLE = "disk"
    READS = (Slice.DISK, Slice.CHECKPOINTS, Slice.RUN)

    def render_view(self, view: View) -> Table:
        d = view.system.disk
        width = max(6, min(20, (self.size.width or 60) - 60))
        out = Table.grid(padding=(0, 1))
        # Fixed widths for label, bar and percent; the last column takes what is left and
        # is cut with an ellipsis, so a long reason never squeezes a checkpoint's name.
        out.add_column(no_wrap=True, min_width=16, max_width=18, overflow="ellipsis")
        out.add_column(no_wrap=True, min_width=width)
        out.add_column(no_wrap=True, justify="right", min_width=4)
        out.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
        err = view.system.errors.get("disk")
        if err:
            out.add_row(Text(err, style="red"), "", "", "")
        if d is None:
            if not err:
                out.add_row(Text("measuring…", style="italic grey62"), "", "", "")
        else:
            for u in d.disks:
                pct = u.pct
                growth = ""
                if u.growth_bps and u.growth_bps > 1 << 20:
                    growth = f"+{human_bytes(u.growth_bps)}/s"
                    if u.full_in_s is not None:
                        growth += f" full in {duration(u.full_in_s)}"
                out.add_row(", ".join(u.labels), bar(pct / 100, width), f"{pct:3.0f}%", f"{human_bytes(u.used)}/{human_bytes(u.used + u.free)} {growth}")
            for e in d.errors:
                out.add_row(Text(e, style="red"), "", "", "")
            if d.core_dumps:
                total = sum(size for _, size in d.core_dumps)
                names = ", ".join(os.path.basename(p) for p, _ in d.core_dumps[:3])
                out.add_row(Text(f"core dumps ×{len(d.core_dumps)}", style="bold red"), Text(human_bytes(total), style="red"), "", names)
        cks = sorted(view.state.checkpoints.values(), key=lambda c: c.step)
        if cks:
            total = sum(c.bytes for c in cks)
            where = _short(view, view.checkpoint_dir or os.path.dirname(cks[-1].path))
            out.add_row(Text("checkpoints", style="bold"), human_bytes(total), str(len(cks)), Text(where, style="grey62"))
            for c in cks[-MAX_CKPTS:]:
                mark = Text("✓ complete", style="green") if c.complete else Text("✗ " + c.reason, style="bold red")
                out.add_row(f"  {os.path.basename(c.path)}", human_bytes(c.bytes), "", mark)
        elif view.checkpoint_dir:
            out.add_row("checkpoints", "", "", Text(f"none yet in {_short(view, view.checkpoint_dir)}", style="grey62"))
        return out
