"""`runtop` as a user types it: exit codes, one-line errors, JSON on stdout, secrets hidden."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def runtop(*args, cwd=None, timeout=120):
    try:
        return subprocess.run([sys.executable, "-m", "runtop", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as e:  # a command that follows the run: what it said before it was stopped
        return subprocess.CompletedProcess(e.cmd, -9, e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or "",
                                           e.stderr.decode() if isinstance(e.stderr, bytes) else e.stderr or "")


@pytest.mark.parametrize("setup", ["missing", "empty", "junk", "binary"])
@pytest.mark.parametrize("command", ["status", "check"])
def test_a_path_runtop_cannot_read_exits_3_with_one_line_and_no_traceback(tmp_path, setup, command):
    """`status --json` and `check` agree: 3 is a run runtop cannot read, whichever asks."""
    path = tmp_path / "x"
    if setup != "missing":
        path.mkdir()
    if setup == "junk":
        (path / "readme.txt").write_text("hello")
    if setup == "binary":
        path = path / "shard.log"
        path.write_bytes(b"\x00\x01PK\x03\x04" * 200)
    r = runtop(command, *(["--json"] if command == "status" else []), str(path))
    assert r.returncode == 3 and r.stdout == ""
    # One short line saying what is wrong, one hint saying what runtop reads (it was one line of 450).
    said, hint = r.stderr.rstrip("\n").split("\n")
    assert said.startswith("runtop: ") and len(said) <= 160 and len(hint) <= 160, r.stderr
    assert hint.startswith("  hint: ") and "prime-rl" in hint and "a directory of runs" in hint
    assert "Traceback" not in r.stderr


def test_status_json_of_a_simulated_crash(simulated):
    r = runtop("status", "--json", simulated("trainer-oom", max_steps=20, fail_step=6))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["framework"] == "prime-rl" and doc["layout"] == "main"
    assert doc["health"]["verdict"] == "Down"
    assert doc["progress"]["trainer_step"] == 5 and doc["progress"]["max_steps"] == 20


def test_secrets_in_logs_never_reach_the_output(simulated):
    root = simulated("healthy", max_steps=3)
    with open(os.path.join(root, "logs/attempt_1/orchestrator.log"), "a") as f:
        f.write("14:59:00   ERROR + export WANDB_API_KEY=sk-live-1234567890\n")
    for args in (("status", root), ("status", "--json", root)):
        r = runtop(*args)
        assert r.returncode == 0 and "sk-live-1234567890" not in r.stdout and "WANDB_API_KEY=***" in r.stdout


def test_runtop_path_follows_and_demo_rejects_unknown_scenarios(tmp_path):
    r = runtop("demo", "--scenario", "meteor")
    assert r.returncode == 2 and "unknown scenario" in r.stderr
    r = runtop(str(tmp_path / "nope"))
    assert r.returncode == 3 and "no such file or directory" in r.stderr


@pytest.mark.parametrize(("word", "meant"), [("stauts", "status"), ("chek", "check"), ("wacth", "watch"), ("exprot", "export"),
                                             ("help", "runtop --help")])
def test_a_misspelt_command_is_a_usage_error_with_a_suggestion(simulated, word, meant):
    """`runtop stauts RUN` was taken as a path: the runs table of two paths, one of them missing,
    and exit 0. A first word that is no path and reads as a command is a slip, said as one."""
    run = simulated("healthy", max_steps=3)
    r = runtop(word, run)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr == f"runtop: unknown command {word!r} (did you mean {meant!r}?)\n"


def test_a_path_that_looks_like_a_command_word_is_still_a_path(simulated, tmp_path):
    """`runtop PATH` stays: a run dir named `stauts` (or `checks`, or anything) is followed."""
    import shutil

    shutil.copytree(simulated("healthy", max_steps=3), tmp_path / "stauts")
    r = runtop("stauts", "--interval", "0.2", cwd=tmp_path, timeout=5)  # it follows the run until stopped
    assert "| step 3/3 | Finished |" in r.stdout.splitlines()[0] and r.stderr == "", r.stderr
    # A missing path with a `/` or a `.` is a path the user meant: runtop says it is missing.
    for path in ("outputs/stauts", "status.log"):
        r = runtop(path, cwd=tmp_path)
        assert r.returncode == 3 and "no such file or directory" in r.stderr and "unknown command" not in r.stderr


def test_runtop_tui_runs_file_as_the_readme_gives_it(tmp_path):
    """`runtop tui --runs runs.txt` needed a positional path beside the file: it stands alone now.
    Without a terminal it prints the runs table once."""
    from runtop.frameworks.primerl.sim import Simulator

    Simulator(str(tmp_path / "one"), scenario="healthy", max_steps=3).run()
    Simulator(str(tmp_path / "two"), scenario="trainer-oom", max_steps=9).run()
    (tmp_path / "runs.txt").write_text("# my runs\none\n\ntwo\n")
    r = runtop("tui", "--runs", "runs.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [ln.split()[:2] for ln in r.stdout.splitlines()[1:]] == [["Down", "two"], ["Finished", "one"]]
    (tmp_path / "none.txt").write_text("# nothing yet\n")
    r = runtop("tui", "--runs", "none.txt", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr == "runtop: tui: --runs none.txt names no run\n"
    r = runtop("tui", cwd=tmp_path)
    assert r.returncode == 2 and "give a run directory, a log file, a directory of runs, or --runs FILE" in r.stderr


def test_demo_runs_a_live_simulated_run_headless():
    r = runtop("demo", "--scenario", "trainer-oom", "--speed", "1000", "--steps", "9", "--duration", "2.5", "--interval", "0.2")
    assert r.returncode == 0, r.stderr
    assert "Down" in r.stdout.splitlines()[-1]


def test_demo_simulates_a_skyrl_run_too():
    r = runtop("demo", "--framework", "skyrl", "--scenario", "disk-full", "--speed", "5000", "--steps", "5", "--duration", "3", "--interval", "0.2")
    assert r.returncode == 0, r.stderr
    assert "simulating a skyrl run (disk-full)" in r.stderr
    last = r.stdout.splitlines()[-1]
    assert "Down" in last and "save_checkpoints" in last
    r = runtop("demo", "--framework", "skyrl", "--scenario", "trainer-oom")
    assert r.returncode == 2 and "unknown scenario 'trainer-oom' for skyrl" in r.stderr


BAD_ARGUMENTS = [
    (["watch", "{run}", "--every", "soon"], 2, "'soon' is not a duration"),
    (["demo", "--duration", "forever"], 2, "'forever' is not a duration"),
    # (argv after the run dir is put in, exit code, words of the one line)
    (["watch", "{run}", "--interval", "0"], 2, "give a duration above 0"),
    (["watch", "{run}", "--interval", "-1"], 2, "give a duration above 0"),
    (["tui", "{run}", "--interval", "nan"], 2, "give a duration above 0"),
    (["follow", "{run}", "--interval", "inf"], 2, "give a duration above 0"),
    (["demo", "--speed", "0"], 2, "give a speed above 0"),
    (["demo", "--speed", "-5"], 2, "give a speed above 0"),
    (["demo", "--steps", "0"], 2, "give 1 or more"),
    (["demo", "--duration", "0"], 2, "give a duration above 0"),
    (["watch", "{run}", "--count", "0"], 2, "give 1 or more"),
    (["send", "resume", "{run}", "--step", "-1"], 2, "a step is 0 or more"),
    (["check", "{run}", "--interval", "2"], 3, "unrecognized arguments: --interval 2"),
    (["status", "{run}", "--config", "{binary}"], 2, "not a TOML file"),
    (["check", "{run}", "--config", "{binary}"], 3, "not a TOML file"),
    (["status", "{run}", "--config", "{negative}"], 2, "health.entropy_floor must be at least 0, not -3"),
    (["status", "{run}", "--config", "{share}"], 2, "health.format_failure_rate must be at most 1, not 25"),
    (["status", "{run}", "--config", "{nan}"], 2, "health.silence_s must be a finite number"),
    (["status", "{run}", "--config", "{window}"], 2, "health.entropy_window must be a whole number"),
    (["status", "{run}", "--config", "{order}"], 2, "disk_warn_pct (97) is above health.disk_crit_pct (95)"),
]


@pytest.mark.parametrize(("argv", "code", "words"), BAD_ARGUMENTS, ids=[" ".join(a[:1] + a[2:]) for a, _c, _w in BAD_ARGUMENTS])
def test_every_bad_argument_is_one_line_and_an_exit_code(simulated, tmp_path, capsys, argv, code, words):
    """`--interval 0` was a busy loop, `nan` a traceback, a binary `--config` an
    "internal error". Each is now one line on stderr and exit 2 (3 for `check`), before anything starts."""
    from runtop.cli.main import main

    run = simulated("healthy", max_steps=3)
    configs = {
        "binary": b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe", "negative": b"[health]\nentropy_floor = -3\n",
        "share": b"[health]\nformat_failure_rate = 25\n", "nan": b"[health]\nsilence_s = nan\n",
        "window": b"[health]\nentropy_window = 2.5\n", "order": b"[health]\ndisk_warn_pct = 97\n",
    }
    paths = {}
    for name, data in configs.items():
        paths[name] = str(tmp_path / f"{name}.toml")
        with open(paths[name], "wb") as f:
            f.write(data)
    args = [a.format(run=run, **paths) for a in argv]
    try:
        rc = main(args)
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert rc == code and len(lines) == 1 and words in lines[0], (rc, out.err)
    assert "Traceback" not in out.err and "internal error" not in out.err and out.out == ""


def test_demo_calls_a_stall_in_the_simulated_runs_own_time():
    """`--scenario stalled` showed Healthy for 10 minutes at 20×: the rules now count
    the silence in the simulated run's seconds, and the rolling line says why it is Down."""
    r = runtop("demo", "--scenario", "stalled", "--speed", "400", "--duration", "7", "--interval", "0.5")
    assert r.returncode == 0, r.stderr
    down = [ln for ln in r.stdout.splitlines() if "| Down" in ln]
    assert down and "no log write anywhere for" in down[-1], r.stdout[-600:]


def test_demo_keep_keeps_the_run_and_sigterm_cleans_it_up():
    import re
    import signal
    import time

    r = runtop("demo", "--keep", "--speed", "1000", "--steps", "3", "--duration", "2")
    kept = re.search(r"is kept in (\S+)", r.stderr)
    assert r.returncode == 0 and kept and os.path.isdir(kept.group(1)), r.stderr
    import shutil

    shutil.rmtree(os.path.dirname(kept.group(1)))
    p = subprocess.Popen([sys.executable, "-m", "runtop", "demo", "--speed", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    where = re.search(r"in (\S+)$", line.strip())
    assert where, line
    deadline = time.monotonic() + 10
    while not os.path.isdir(where.group(1)) and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=20)
    assert "was removed from" in err and not os.path.exists(where.group(1)), err


def test_status_and_check_do_not_load_the_demo_simulators_but_demo_help_lists_their_scenarios(tmp_path):
    """Every `status` and `check` paid 25 ms of simulator imports for a help line it never shows."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "orchestrator.log").write_text("14:00:01 INFO Train batch 1/8\n")
    probe = (
        "import sys, contextlib, io\nfrom runtop.cli import main as cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    cli.main(['check', {str(tmp_path)!r}])\n"
        "print(sorted(m for m in sys.modules if m.startswith('runtop.simulator.')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    shown = subprocess.run([sys.executable, "-m", "runtop", "demo", "--help"], capture_output=True, text=True, check=True).stdout
    assert "prime-rl: healthy" in " ".join(shown.split())


# The commands that read a run, and the options that say which files and how it is read.
READS_A_RUN = ("status", "check", "actions", "send", "watch", "forensics", "export", "serve", "tui", "follow")
RUN_OPTIONS = ("--ckpt-dir", "--metrics", "--config", "--framework")


def _subcommands():
    import argparse

    from runtop.cli.args import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def test_every_command_that_reads_a_run_takes_the_same_run_options_and_describes_its_arguments():
    """`serve` and `export` lacked --ckpt-dir and --metrics; only `status` described its path."""
    commands = _subcommands()
    for name in READS_A_RUN:
        flags = {s for a in commands[name]._actions for s in a.option_strings}
        assert set(RUN_OPTIONS) <= flags, (name, set(RUN_OPTIONS) - flags)
    for name, p in commands.items():
        for a in p._actions:
            if not a.option_strings:
                assert a.help, f"runtop {name}: its {a.dest} is not described in --help"


def test_every_duration_reads_the_same_units():
    """`--every 30m` but `--duration S`: every option that takes a time now reads 90, 90s, 30m, 1h."""
    commands = _subcommands()
    times = [(name, a) for name, p in commands.items() for a in p._actions
             if set(a.option_strings) & {"--duration", "--every", "--interval", "--client-timeout"}]
    assert {n for n, a in times if "--duration" in a.option_strings} >= {"watch", "export", "demo"}
    for name, a in times:
        assert a.type("30m") == 1800 and a.type("90") == 90 and a.type("1h 30m") == 5400 and a.type("500ms") == 0.5, (name, a.dest)


def test_export_and_serve_read_the_run_with_its_own_options(simulated, tmp_path):
    """A SkyRL-style run whose metrics are elsewhere: export reads the --metrics file, and serve
    refuses a --metrics file that is not there in one line, before it listens."""
    run = simulated("healthy", max_steps=3)
    metrics = tmp_path / "extra.jsonl"
    metrics.write_text('{"step": 1, "my_reward": 0.25}\n')
    r = runtop("export", run, "--once", "--textfile", str(tmp_path / "out.prom"), "--metrics", str(metrics))
    assert r.returncode == 0, r.stderr
    r = runtop("export", run, "--once", "--textfile", str(tmp_path / "out.prom"), "--metrics", str(tmp_path / "none.jsonl"))
    assert r.returncode == 3 and r.stderr.startswith("runtop: --metrics ") and "no such file" in r.stderr
    r = runtop("serve", run, "--metrics", str(tmp_path / "none.jsonl"), "--port", "0")
    assert r.returncode == 3 and r.stderr.startswith("runtop: --metrics ") and "no such file" in r.stderr


def test_serve_hands_the_run_options_to_each_session():
    from argparse import Namespace

    from runtop.cli.serve import serve_argv

    args = Namespace(interval=2.0, allow_actions=False, config=None, ckpt_dir="ck", metrics=["m.jsonl"], framework="generic",
                     slurm_job="42", ray_address=None)
    argv = serve_argv("run", args)
    assert argv[argv.index("--ckpt-dir") + 1] == os.path.abspath("ck")
    assert argv[argv.index("--metrics") + 1] == os.path.abspath("m.jsonl")
    assert argv[argv.index("--framework") + 1] == "generic" and argv[argv.index("--slurm-job") + 1] == "42"
