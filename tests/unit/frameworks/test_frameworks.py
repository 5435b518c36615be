"""The framework seam: everything a framework does differently lives in its
plug-in under runtop/frameworks/, and nothing else names a framework."""

from __future__ import annotations

import pathlib
import re

import pytest

from runtop.frameworks import GENERIC, REGISTRY, UNKNOWN, get, simulated
from runtop.frameworks.base import Framework
from tests.paths import REPO

ROOT = REPO
# The code that must not know which frameworks exist. The simulators write a framework's
# files, so they are that framework's by nature (the plug-in hands them out).
GUARDED = ("runtop", "parsers", "tui", "widgets")
EXEMPT = ("runtop/frameworks/", "runtop/simulator/", "runtop/playback/")
# A framework's name as a string, or a comparison with `.framework`.
NAME_RE = re.compile(r"""(["'])(?:prime-rl|skyrl|primerl|prime_rl|verl|trl|openrlhf|nemo-rl)\1|\.framework\s*[!=]=""", re.I)


def _guarded_files() -> list[pathlib.Path]:
    out = []
    for top in GUARDED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(EXEMPT):
                out.append(path)
    return out


def test_no_code_outside_the_plug_ins_names_a_framework():
    hits = []
    for path in _guarded_files():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if NAME_RE.search(code):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "framework names outside runtop/frameworks/:\n" + "\n".join(hits)


def test_the_guard_would_catch_a_branch(tmp_path):
    """The guard is not vacuous: the lines it exists for match it."""
    for line in ('if state.framework == "skyrl":', "if lay.framework != 'prime-rl':", 'label = "x" if fw == "skyrl" else "y"'):
        assert NAME_RE.search(line), line
    assert not NAME_RE.search("fw = get_framework(state.framework)")


@pytest.mark.parametrize("name", sorted(fw.name for fw in simulated()))
def test_each_plug_in_provides_the_whole_contract(name):
    fw = REGISTRY[name]
    assert isinstance(fw, Framework) and fw.name == name and get(name) is fw
    assert fw.expected_roles and fw.expects and fw.scenarios and fw.process_titles
    # Everything a run needs from its framework is overridden or meaningfully inherited.
    for method in ("file_layout", "scan_checkpoints", "resume_words", "relist_checkpoints", "simulator"):
        assert getattr(type(fw), method) is not getattr(Framework, method), (name, method)
    sim = fw.simulator(None, fw.scenarios[0])
    assert hasattr(sim, "run")
    sim.stop()  # its temp dir goes


def test_the_generic_reader_is_a_plug_in_that_reads_and_says_so_but_acts_on_nothing():
    """It claims no evidence (it reads what nothing else claims), says how it read a run, and has
    no checkpoints, resume or simulator: it knows no framework's."""
    fw = REGISTRY["generic"]
    assert get("generic") is fw and fw is GENERIC and list(REGISTRY)[-1] == "generic"
    assert fw.evidence == () and fw.read_note and fw.expected_roles == ("trainer",)
    assert fw not in simulated() and fw.scenarios == ()
    with pytest.raises(NotImplementedError):
        fw.resume_words(None, [], 1, "/x")  # type: ignore[arg-type]
    for other in simulated():
        assert other.evidence and all(s.weight in (1, 2, 3) for s in other.evidence), other.name


def test_an_unknown_framework_gets_a_plug_in_that_knows_nothing():
    assert get("nemo-rl-next") is UNKNOWN
    assert UNKNOWN.expected_roles == () and not UNKNOWN.launches_inference
    with pytest.raises(NotImplementedError):
        UNKNOWN.resume_words(None, [], 1, "/x")  # type: ignore[arg-type]


def test_a_frameworks_own_counters_live_in_its_plug_in(skyrl_run, simulated):
    """skyrl-agent's trajectories, rewards, format rules and code errors are
    SkyRL's alone: the common state has no field for them, the plug-in folds them into its
    own state, and a prime-rl run keeps none (the same events reach no reducer there)."""
    import dataclasses

    from runtop.engine.snapshot import read_run
    from runtop.parsers.events import AgentReward, FormatFailure, Trajectory
    from runtop.state.run import RunState

    assert "agent" not in {f.name for f in dataclasses.fields(RunState)}

    sky = read_run(skyrl_run("healthy", max_steps=3), processes=False)
    assert sky.plugin is not None and sky.agent.trajectories > 0 and sky.agent.format_failures
    trajectories = sky.agent.trajectories
    sky.apply(Trajectory("i-1", {"ft": 1.0}), "x")
    assert sky.agent.trajectories == trajectories + 1

    prime = read_run(simulated("healthy", max_steps=3), processes=False)
    assert prime.plugin is None
    for ev in (Trajectory("i-1", {"ft": 1.0}), AgentReward("ft", 1.0), FormatFailure(3)):
        prime.apply(ev, "x")
    assert prime.plugin is None and prime.agent.trajectories == 0 and not prime.agent.rewards
