"""What the frameworks that write one console log (wherever the user redirected it) share:
the log found by its signs in a file or in the run dir holding it, the newest of
several, the run named for the log. A plug-in sets `signs` and `layout_name`."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from typing import Any

from runtop.frameworks.base import Framework, Parse
from runtop.frameworks.layout import RunLayout, Tracked, resolve
from runtop.parsers.checkpoints import Problem
from runtop.parsers.crashes import error_notice, has_traceback
from runtop.parsers.events import TRAINER, Event, Unparsed
from runtop.parsers.records import HeaderFn, Record
from runtop.sources.regular import open_text
from runtop.sources.walk import tree_size
from runtop.state.parts import Checkpoint


class DriverLogFramework(Framework):
    layout_name = "driver log"
    expected_roles = ("trainer",)  # the driver: its death is the run's
    driver_role = "trainer"
    rollout_role = "rollout"
    takes_ckpt_dir = True  # the log may not say where the checkpoints are

    def _layout(self, path: str) -> RunLayout:
        path = os.path.abspath(path)
        lay = RunLayout(os.path.dirname(path), self.name, self.layout_name)
        lay.logs = [Tracked(path, "trainer", "log")]
        return lay

    def logs_in_dir(self, path: str, logs: list[str]) -> RunLayout | None:
        found = list(logs)  # discovery's order: the one to follow last
        if not found:
            return None
        lay = self._layout(found[-1])
        lay.root = path  # the run's directory (where it was launched; its checkpoints beneath)
        if len(found) > 1:
            lay.notes.insert(0, f"{len(found)} {self.name} logs in {path}; reading {os.path.basename(found[-1])}, the newest driver log")
        return lay

    def file_layout(self, path: str, text: str) -> RunLayout:
        return self._layout(path)

    def split_lines(self, lines: list[str]) -> list[str]:
        from runtop.parsers.skyrl_records import split_frames

        # A bar's frames → its last; a record glued behind one (a dict, a watchdog line) on its own line.
        return split_frames(lines)

    def default_run_name(self, layout: RunLayout) -> str:
        if layout.logs:
            return os.path.splitext(os.path.basename(layout.logs[0].path))[0]
        return super().default_run_name(layout)

    # ---- what each such plug-in declares instead of writing -------------------------
    # `package`: its `parse` module (`header`, `Parser`) and `sim` module (`SCENARIOS`,
    # `Simulator`), imported when first needed (they cost start-up time otherwise).
    package = ""

    def _module(self, name: str) -> Any:
        return importlib.import_module(f"{self.package}.{name}")

    def header(self, tracked: Tracked) -> HeaderFn | None:
        return self._module("parse").header  # type: ignore[no-any-return]

    def parser(self, tracked: Tracked, batch_rollouts: int | None) -> Parse:
        return self._module("parse").Parser().parse  # type: ignore[no-any-return]

    @property
    def scenarios(self) -> tuple[str, ...]:  # type: ignore[override]
        return self._module("sim").SCENARIOS  # type: ignore[no-any-return]

    def simulator(self, root: str | None, scenario: str, **kw: Any) -> Any:
        return self._module("sim").Simulator(root, scenario=scenario, **kw)

    def named_in_log(self, layout: RunLayout, pattern: re.Pattern[str]) -> tuple[str | None, str | None]:
        """A directory the launch line or printed config in the log's head names (`--ckpt.path
        DIR`, `checkpoint_dir: DIR`), resolved from the run dir: (the dir, or None and why)."""
        for t in layout.logs:
            try:
                with open_text(t.path) as f:
                    m = pattern.search(f.read(1 << 16))
            except OSError:
                continue
            if m:
                resolved = resolve(m.group(1), layout.root)
                return (resolved, None) if resolved else (None, f"checkpoint dir {m.group(1)} is not on this machine; give --ckpt-dir")
        return None, None


class RecordParser:
    """A driver log's parser: each record through `_record`; one that fails is counted and
    named, the rest read."""

    last_time: str | None = None  # the newest record's clock, for records that carry none

    def vllm_or_clock(self, rec: Record, out: list[Event]) -> bool:
        """A vLLM record goes to vLLM's own reader (True: done with it); any other keeps the
        clock current."""
        if rec.fmt in ("vllm", "uvicorn"):
            from runtop.parsers import vllm

            out.extend(vllm.parse_record(rec))
            return True
        if rec.time:
            self.last_time = rec.time
        return False

    def parse(self, records: list[Record], role: str = TRAINER) -> list[Event]:
        out: list[Event] = []
        for rec in records:
            try:
                self._record(rec, role, out)
            except Exception as e:  # noqa: BLE001 - a garbled record is counted and named, the rest is read
                out.append(Unparsed(rec.line, f"{type(e).__name__}: {str(e)[:120]}"))
        return out

    def _record(self, rec: Record, role: str, out: list[Event]) -> None:
        raise NotImplementedError

    @staticmethod
    def crash(rec: Record, role: str, out: list[Event], *, fatal_traceback: bool) -> None:
        """An ERROR record, or a headerless one (a Ray process's print, raylet, stderr) with a
        traceback or a way to die in it, through the shared root-cause selection. A bare
        print is no error unless it names a way to die."""
        lines = rec.lines()
        if rec.level in ("ERROR", "CRITICAL") or rec.fmt in ("orphan", "raylet", "print") or has_traceback([rec.message, *lines]):
            notice = error_notice(rec, role, traceback_is_fatal=fatal_traceback)
            if notice is not None and (notice.kind != "error" or rec.level in ("ERROR", "CRITICAL")):
                out.append(notice)


def ray_led(own: Callable[[str], Record | None]) -> HeaderFn:
    """A Ray driver log's record header: `own(body)` starts the framework's own records (its
    step lines, bars, end), whatever Ray prefix they carry; a traceback always starts a
    record (never the continuation of the step line the same process printed before it);
    a Ray prefix printed alone on its line (OpenRLHF#350) is an empty record; the rest is
    the shared Ray-driver-log header's (prefixes, `(raylet)`, `[repeated Nx]`)."""
    from runtop.parsers.skyrl_records import RAY_PREFIX_RE, TQDM_END_RE
    from runtop.parsers.skyrl_records import header as ray_header

    def header(line: str, pending: Record | None) -> Record | None:
        body, proc = line, None
        if line.startswith("("):
            m = RAY_PREFIX_RE.match(line)
            if m:
                proc, body = m.group(1), line[m.end():]
        if proc is not None and not body.strip():
            rec: Record | None = Record("ray-prefix", None, None, "")
        elif body.startswith("Traceback (most recent call last)"):
            rec = Record("orphan", None, None, body)
        else:
            rec = own(body)
            if rec is None and "%|" in body and TQDM_END_RE.search(body):
                rec = Record("bar", None, None, body)  # any other bar: a record of its own, never a continuation
        if rec is None:
            return ray_header(line, pending)
        rec.proc = proc
        return rec

    return header


def scan_renamed(ckpt_dir: str, pattern: re.Pattern[str], marker: str, tmp_words: str) -> dict[int, Checkpoint]:
    """Saves written under a temporary name and renamed when whole (TRL's `tmp-checkpoint-N`,
    NeMo-RL's `tmp_step_N`): `pattern` matches both (group 1: the tmp prefix, group 2: the
    step); a renamed one is whole when it holds `marker`; a whole one wins over its tmp twin."""
    try:
        names = os.listdir(ckpt_dir)
    except OSError:
        return {}
    out: dict[int, Checkpoint] = {}
    for name in sorted(names, key=lambda n: n.startswith("tmp")):
        m = pattern.match(name)
        path = os.path.join(ckpt_dir, name)
        if not m or not os.path.isdir(path):
            continue
        step = int(m.group(2))
        size = tree_size(path)
        if m.group(1):
            if step not in out:
                out[step] = Checkpoint(step, path, False, tmp_words, size, Problem.IN_PROGRESS)
        elif not os.path.isfile(os.path.join(path, marker)):
            out[step] = Checkpoint(step, path, False, f"no {marker}", size, Problem.MISSING_PART)
        else:
            out[step] = Checkpoint(step, path, True, f"renamed when whole, {marker} present", size)
    return out
