"""Stand-in `squeue`, `sacct`, `sbatch` and `scancel` for the SLURM tests: real executables on
`PATH` that print what each SLURM generation prints, for jobs described in the JSON file
named by `$RUNTOP_FAKE_SLURM` (the tests write it; no cluster is on this machine).

Shapes, each from a genuine capture:
- 23.11 `--json`: states as lists, numbers as `{"set", "infinite", "number"}` triples
  (virtualcell/vcell#1913, `sacct-json-multistep.json`, Slurm 23.11.10); squeue of a job that
  left the queue prints an empty `jobs` list.
- 21.08 `--json`: plain strings and numbers, the limit in minutes, `exit_code` as
  `{"status", "return_code"}` (mila-iqia/SARC's Slurm 21.08.8 fixtures); squeue of a job that
  left the queue fails with `slurm_load_jobs error: Invalid job id specified`.
- 20.11 (no `--json`): getopt's refusal, then `--parsable2` with its header and one line per
  step (`4242`, `4242.batch`, `4242.extern`, `4242.0`: martius-lab/cluster_utils#87), a
  state with words (`CANCELLED by 54321`: vcell#1913), `[D-]HH:MM:SS` durations; the columns
  are those `--format` names, in its order (`User` empty on a step's line, as sacct leaves it).
- Who submitted the job: `user` in sacct's JSON, `User` in its table; a job's `"user"` in the
  file, else the user running the tests.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
import time


def _hms(secs: float) -> str:
    s = int(secs)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def _triple(n: float | None) -> dict[str, object]:
    return {"set": n is not None, "infinite": False, "number": int(n or 0)}


def _opt(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def main(tool: str, argv: list[str]) -> int:
    cfg_path = os.environ["RUNTOP_FAKE_SLURM"]
    with open(cfg_path) as f:
        cfg = json.load(f)
    with open(cfg_path + ".calls", "a") as f:
        f.write(json.dumps([tool, *argv]) + "\n")
    version = cfg.get("version", "23.11")
    now = time.time()
    if tool == "scancel":
        return 0  # the call is recorded; a real scancel prints nothing on success
    if tool == "sbatch":
        new = int(max(cfg["jobs"], key=int)) + 1
        print(f"Submitted batch job {new}")
        return 0
    if cfg.get("down"):
        print(f"{tool}: error: Unable to contact slurm controller (connect failure)", file=sys.stderr)
        return 1
    if "--json" in argv and version < "21.08":
        print(f"{tool}: unrecognized option '--json'", file=sys.stderr)
        print(f'Try "{tool} --help" for more information', file=sys.stderr)
        return 1
    job_id = _opt(argv, "-j") or ""
    job = cfg["jobs"].get(job_id)
    new_shape = version >= "23.02"
    if tool == "squeue":
        listed = job is not None and job.get("in_queue", job["state"] in ("RUNNING", "PENDING", "COMPLETING", "REQUEUED"))
        if not listed:
            if new_shape:
                if "--json" in argv:
                    print(json.dumps({"jobs": [], "errors": [], "warnings": []}))
                return 0
            print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
            return 1
        assert job is not None
        start = job.get("start", now - job.get("elapsed", 0))
        if "--json" in argv:
            state = [job["state"]] if new_shape else job["state"]
            entry = {
                "job_id": int(job_id), "name": job.get("name", "rl"), "job_state": state,
                "time_limit": _triple(job.get("limit_min")) if new_shape else job.get("limit_min"),
                "start_time": _triple(start) if new_shape else int(start),
                "node_count": _triple(job.get("node_count", 1)) if new_shape else job.get("node_count", 1),
                "nodes": job.get("nodes", ""), "state_reason": job.get("reason", "None"),
            }
            print(json.dumps({"jobs": [entry]}, indent=2))
            return 0
        elapsed = job.get("elapsed", 0)
        limit = job.get("limit_min")
        where = job.get("nodes", "") if job["state"] == "RUNNING" else f"({job.get('reason', 'None')})"
        left = _hms(limit * 60 - elapsed) if limit else "UNLIMITED"
        print("|".join([job_id, job.get("name", "rl"), job["state"], _hms(elapsed), left,
                        _hms(limit * 60) if limit else "UNLIMITED", str(job.get("node_count", 1)), where]))
        return 0
    # sacct
    fields = (_opt(argv, "--format") or DEFAULT_FORMAT).split(",")
    if job is None:
        if "--json" in argv:
            print(json.dumps({"jobs": []}))
        else:
            print("|".join(fields))
        return 0
    user = job.get("user", pwd.getpwuid(os.geteuid()).pw_name)
    code, _, sig = job.get("exit", "0:0").partition(":")
    steps = job.get("steps", [])
    if "--json" in argv:
        if new_shape:
            exit_code = {"status": ["SUCCESS" if code == "0" and sig == "0" else "ERROR"], "return_code": _triple(int(code)),
                         "signal": {"id": _triple(int(sig) if sig != "0" else None), "name": ""}}
            state = {"current": [job["state"].split(" ")[0]], "reason": job.get("reason", "None")}
            times = {"elapsed": job.get("elapsed", 0), "limit": _triple(job.get("limit_min")), "start": int(now - job.get("elapsed", 0)), "end": 0}
            step_docs = [{"step": {"id": sid, "name": sid.split(".")[1]}, "state": [st.split(" ")[0]]} for sid, st in steps]
        else:
            exit_code = {"status": "SUCCESS" if code == "0" else "FAILED", "return_code": int(code)}
            state = {"current": job["state"].split(" ")[0], "reason": job.get("reason", "None")}
            times = {"elapsed": job.get("elapsed", 0), "limit": job.get("limit_min"), "start": int(now - job.get("elapsed", 0)), "end": 0}
            step_docs = [{"step": {"id": sid, "name": sid.split(".")[1]}, "state": st.split(" ")[0]} for sid, st in steps]
        doc = {"meta": {"Slurm": {"release": version}}, "errors": [], "jobs": [{
            "job_id": int(job_id), "name": job.get("name", "rl"), "user": user, "state": state, "time": times, "exit_code": exit_code,
            "nodes": job.get("nodes", ""), "allocation_nodes": job.get("node_count", 1), "steps": step_docs,
        }]}
        print(json.dumps(doc, indent=2))
        return 0
    limit = job.get("limit_min")
    rows = [{"JobID": job_id, "JobName": job.get("name", "rl"), "User": user, "State": job["state"], "ExitCode": job.get("exit", "0:0"),
             "Elapsed": _hms(job.get("elapsed", 0)), "Timelimit": _hms(limit * 60) if limit else "UNLIMITED",
             "NNodes": str(job.get("node_count", 1)), "NodeList": job.get("nodes", ""), "Start": "2026-11-23T08:00:00",
             "End": "Unknown" if job["state"] == "RUNNING" else "2026-11-24T08:00:00"}]
    for sid, st in steps:
        rows.append({"JobID": sid, "JobName": sid.split(".")[1], "State": st, "ExitCode": "0:0", "Elapsed": _hms(job.get("elapsed", 0)),
                     "NNodes": "1", "NodeList": job.get("nodes", "")})
    print("\n".join(["|".join(fields)] + ["|".join(r.get(f, "") for f in fields) for r in rows]))
    return 0


DEFAULT_FORMAT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"  # sacct's own default columns


if __name__ == "__main__":
    sys.exit(main(os.path.basename(sys.argv[1]), sys.argv[2:]))
