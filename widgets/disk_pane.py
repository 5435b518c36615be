"""Disks the run fills (used/total, growth, time to full), its checkpoints (size, complete?) and core dumps."""

from __future__ import annotations

import os
import textwrap

from rich.text import Text

from runtop.state.parts import Checkpoint
from runtop.view.view import Slice, View
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

    def render_view(self, view: View) -> Text:
        """Fixed columns (label, bar, percent, sizes) drawn as lines, not a table: a long
        reason goes on a line of its own instead of squeezing the bar, the percent and the
        sizes to nothing (they vanished exactly when a checkpoint failed)."""
        d = view.system.disk
        inner = max(30, (self.size.width or 80) - 4)  # the border and the padding
        bar_w = max(6, min(16, inner - 60))
        lines: list[Text] = []
        err = view.system.errors.get("disk")
        if err:
            lines.append(Text(err, style="red"))
        if d is None:
            if not err:
                lines.append(Text("measuring…", style="italic grey62"))
        else:
            for u in d.disks:
                line = Text(f"{_fit(', '.join(u.labels), LABEL_W)} ")
                line.append_text(bar(u.pct / 100, bar_w))
                line.append(f" {u.pct:3.0f}% ")
                line.append(f"{human_bytes(u.used)}/{human_bytes(u.used + u.free)}")
                if u.growth_bps and u.growth_bps > 1 << 20:
                    grow = f" +{human_bytes(u.growth_bps)}/s" + (f" full in {duration(u.full_in_s)}" if u.full_in_s is not None else "")
                    line.append(grow, style="yellow")
                lines.append(line)
            lines += [Text(e, style="red") for e in d.errors]
            if d.core_dumps:
                total = sum(size for _, size in d.core_dumps)
                names = ", ".join(os.path.basename(p) for p, _ in d.core_dumps[:3])
                lines.append(Text.assemble((_fit(f"core dumps ×{len(d.core_dumps)}", LABEL_W), "bold red"), " ", (f"{human_bytes(total):>8}", "red"), "  ", names))
        cks = sorted(view.state.checkpoints.values(), key=lambda c: c.step)
        listed: list[Text] = []
        if cks:
            total = sum(c.bytes for c in cks)
            where = _short(view, view.checkpoint_dir or os.path.dirname(cks[-1].path))
            lines.append(Text.assemble((_fit("checkpoints", LABEL_W), "bold"), f" {human_bytes(total):>8} ×{len(cks)}  ", (where, "grey62")))
            for c in cks[-MAX_CKPTS:]:
                listed += _checkpoint_lines(c, inner)
        elif view.checkpoint_dir:
            lines.append(Text.assemble("checkpoints ", (f"none yet in {_short(view, view.checkpoint_dir)}", "grey62")))
        if not lines:
            lines.append(Text("no disk read yet", style="italic grey62"))
        # Short of rows (tui/fit.py), the disks and the checkpoints' total stay and the newest
        # saves fill what is left: the oldest go first, and a line says how many.
        room = self.room
        if room is not None and len(lines) + len(listed) > room and listed:
            self.wants = len(lines) + len(listed)
            keep = max(0, room - len(lines) - 1)
            older = len(listed) - keep
            zoom = f" ({self.zoom_key} zooms)" if self.zoom_key else ""
            listed = [Text(f"  … {older} older{zoom}", style="grey62 italic"), *listed[len(listed) - keep :]] if room > len(lines) else []
        return Text("\n").join(lines + listed)


LABEL_W = 16


def _checkpoint_lines(c: Checkpoint, inner: int) -> list[Text]:
    head = Text(f"{_fit('  ' + os.path.basename(c.path), LABEL_W)} {human_bytes(c.bytes):>8}  ")
    if c.complete:
        return [head + Text("✓ complete", style="green")]
    reason = "✗ " + c.reason
    if len(head) + len(reason) <= inner:
        return [head + Text(reason, style="bold red")]
    # The reason on a line or two of its own (the alerts pane has it whole).
    wrapped = textwrap.wrap(c.reason, inner - 4, max_lines=2 if inner >= 60 else 1, placeholder=" …")
    return [head + Text("✗ incomplete", style="bold red"), *(Text("    " + part, style="red") for part in wrapped)]


def _fit(text: str, width: int) -> str:
    """`text` in exactly `width` columns: padded, or cut with an ellipsis."""
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"
