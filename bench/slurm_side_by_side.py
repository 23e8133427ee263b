#!/usr/bin/env python3
"""Number crunching for bench/slurm_side_by_side.sh (docs/benchmarks.md, "Drover vs Slurm on
one machine").

Each case directory CASE_DIR holds what the shell script recorded:
  meta      "key value" lines: n, submit_start, submit_end, done_at (epoch seconds, from
            bash's $EPOCHREALTIME, microsecond resolution), label
  submits   "KEY CLIENT_TIME" per job: the client's clock just before the submitting process
            started (for one submission of many jobs, the same time for all)
  stamps    "KEY STAMP_TIME" per job, written by the job itself when it began ($EPOCHREALTIME)
  scontrol  (Slurm cases) `scontrol show job -o` after every job finished
  ctld.log  (cases that ran on Slurm) slurmctld's log since the case's cluster started: when
            it received each submission and started each job, in milliseconds
  cpu       "WHEN MACHINE CTLD DROVER" at the case's start and when all finished: clock ticks
            of the machine (busy), slurmctld and Drover's server with its children
  times.start, times.end   bash's `times` before and after the submissions (its second line:
            the children's user and system time, i.e. the submitting commands')

KEY is Slurm's job id (sbatch), the array task id (sbatch --array) or Drover's job id.

  slurm_side_by_side.py slurm CASE_DIR          -> appends one JSON line to CASE_DIR/../results.jsonl
  slurm_side_by_side.py drover CASE_DIR URL     -> the same, the timelines from GET /v1/jobs/ID
  slurm_side_by_side.py report WORK_DIR         -> the Markdown table of every case
"""

import datetime
import json
import math
import os
import re
import sys
import urllib.request


def read_pairs(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) >= 2:
                out.setdefault(words[0], float(words[1]))
    return out


def read_meta(case_dir):
    meta = {}
    with open(os.path.join(case_dir, "meta")) as f:
        for line in f:
            key, _, value = line.strip().partition(" ")
            meta[key] = value
    return meta


def percentiles(values):
    """p50, p95 and max by nearest rank; None when empty."""
    if not values:
        return None
    v = sorted(values)

    def rank(p):
        return v[max(0, min(len(v) - 1, math.ceil(p / 100.0 * len(v)) - 1))]

    return {"n": len(v), "p50": rank(50), "p95": rank(95), "max": v[-1], "min": v[0]}


def common(case_dir, meta):
    n = int(meta["n"])
    start, end, done = (float(meta[k]) for k in ("submit_start", "submit_end", "done_at"))
    submits = read_pairs(os.path.join(case_dir, "submits"))
    stamps = read_pairs(os.path.join(case_dir, "stamps"))
    client_ms = [
        (stamps[k] - submits[k]) * 1000.0 for k in submits if k in stamps
    ]
    out = {
        "case": os.path.basename(case_dir),
        "label": meta.get("label", ""),
        "n": n,
        "submitted": len(submits),
        "started": len(stamps),
        "submit_s": end - start,
        "submit_per_s": n / (end - start) if end > start else None,
        "all_done_s": done - start,
        "client_submit_to_start_ms": percentiles(client_ms),
    }
    out["cpu_per_job_ms"] = cpu_per_job(case_dir, n, done - start)
    if meta.get("slurm_done_at"):
        # Drover driving Slurm: when Slurm's queue was empty, beside when Drover said so.
        out["slurm_all_done_s"] = float(meta["slurm_done_at"]) - start
    return out


def children_seconds(path):
    """The children's user + system seconds from bash's `times` output ("0m1.250s 0m0.310s" on
    its second line)."""
    with open(path) as f:
        lines = f.read().splitlines()
    total = 0.0
    for word in lines[1].split():
        minutes, _, seconds = word.rstrip("s").partition("m")
        total += int(minutes) * 60 + float(seconds)
    return total


def cpu_per_job(case_dir, n, elapsed_s):
    """CPU per job in ms by part: the submitting commands during the submissions ("client"),
    slurmctld, Drover's server with its children, the rest (slurmd, slurmstepd, the jobs,
    munged, this script's polls) and the machine in all, from the case's start until all
    finished; "busy" is the machine's busy share of all its cores over that time. None
    without the counters."""
    paths = [os.path.join(case_dir, name) for name in ("cpu", "times.start", "times.end")]
    if not all(os.path.exists(path) for path in paths):
        return None
    marks = {}
    with open(paths[0]) as f:
        for line in f:
            words = line.split()
            marks[words[0]] = [int(word) for word in words[1:]]
    if "start" not in marks or "finished" not in marks:
        return None
    tick_s = 1.0 / os.sysconf("SC_CLK_TCK")
    machine, ctld, drover = (
        (after - before) * tick_s for before, after in zip(marks["start"], marks["finished"])
    )
    client = children_seconds(paths[2]) - children_seconds(paths[1])
    parts = {
        "client": client,
        "slurmctld": ctld,
        "drover": drover,
        "rest": machine - client - ctld - drover,
        "machine": machine,
    }
    out = {name: seconds * 1000.0 / n for name, seconds in parts.items()}
    out["busy"] = machine / (elapsed_s * os.cpu_count()) if elapsed_s > 0 else None
    return out


CTLD_RECEIVED = re.compile(r"^\[([0-9T:.-]+)\] _slurm_rpc_submit_batch_job: JobId=(\d+) ")
CTLD_STARTED = re.compile(
    r"^\[([0-9T:.-]+)\] (?:sched/backfill: _start_job: Started JobId=(\d+) in |"
    r"sched: Allocate JobId=(\d+) NodeList)"
)


def ctld_times(case_dir):
    """From CASE_DIR/ctld.log: ({Slurm job id: received}, {Slurm job id: started}), epoch
    seconds (slurmctld logs local time to the millisecond). Array tasks are left out: their
    submission is one for all."""
    received, started = {}, {}
    path = os.path.join(case_dir, "ctld.log")
    if not os.path.exists(path):
        return received, started
    with open(path) as f:
        for line in f:
            match = CTLD_RECEIVED.match(line)
            if match:
                received[match.group(2)] = parse_ctld_time(match.group(1))
                continue
            match = CTLD_STARTED.match(line)
            if match:
                started.setdefault(match.group(2) or match.group(3), parse_ctld_time(match.group(1)))
    return received, started


def parse_ctld_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def split_start(case_dir, slurm_ids):
    """Submit-to-start in three parts, each as percentiles in ms, for the jobs whose Slurm job
    id is known (slurm_ids: stamps key -> Slurm job id): the client's submission until
    slurmctld received the job ("to_slurm": the submitting command, and for Drover its server
    and executor), slurmctld's receipt until it started the job ("in_slurm": mostly the wait for
    its scheduler's next tick), and that start until the job's line ("script": the launch and
    the batch script). None without slurmctld's log."""
    received, started = ctld_times(case_dir)
    submits = read_pairs(os.path.join(case_dir, "submits"))
    stamps = read_pairs(os.path.join(case_dir, "stamps"))
    parts = {"to_slurm": [], "in_slurm": [], "script": []}
    for key, slurm_id in slurm_ids.items():
        if key not in submits or key not in stamps:
            continue
        if slurm_id not in received or slurm_id not in started:
            continue
        parts["to_slurm"].append((received[slurm_id] - submits[key]) * 1000.0)
        parts["in_slurm"].append((started[slurm_id] - received[slurm_id]) * 1000.0)
        parts["script"].append((stamps[key] - started[slurm_id]) * 1000.0)
    if not parts["to_slurm"]:
        return None
    return {name: percentiles(values) for name, values in parts.items()}


def parse_slurm_time(text):
    if text in ("", "None", "Unknown", "N/A"):
        return None
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


def slurm(case_dir):
    meta = read_meta(case_dir)
    result = common(case_dir, meta)
    latencies, states, ends, submits_at = [], {}, [], []
    with open(os.path.join(case_dir, "scontrol")) as f:
        for line in f:
            fields = {}
            for word in line.split():
                key, sep, value = word.partition("=")
                if sep and key not in fields:
                    fields[key] = value
            if fields.get("JobName") != meta.get("job_name"):
                continue
            state = fields.get("JobState", "?")
            states[state] = states.get(state, 0) + 1
            submit = parse_slurm_time(fields.get("SubmitTime", ""))
            start = parse_slurm_time(fields.get("StartTime", ""))
            end = parse_slurm_time(fields.get("EndTime", ""))
            if submit is not None and start is not None:
                latencies.append(start - submit)
                submits_at.append(submit)
            if end is not None:
                ends.append(end)
    result["states"] = states
    result["record_submit_to_start_s"] = percentiles(latencies)
    result["record_first_submit_to_last_end_s"] = (
        max(ends) - min(submits_at) if ends and submits_at else None
    )
    # sbatch per job (A1, A7, S1): the stamps' keys are Slurm's job ids.
    keys = read_pairs(os.path.join(case_dir, "submits"))
    result["submit_to_start_split_ms"] = split_start(case_dir, {key: key for key in keys})
    append(case_dir, result)


def get_json(url):
    # The server's admin token, which the script exports (docs/security.md).
    request = urllib.request.Request(
        url, headers={"Authorization": "Bearer " + os.environ.get("DROVER_TOKEN", "")}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def drover(case_dir, url):
    meta = read_meta(case_dir)
    result = common(case_dir, meta)
    submits = read_pairs(os.path.join(case_dir, "submits"))
    record_ms, workers_ms, handoff_ms, states, created, finished = [], [], [], {}, [], []
    slurm_ids = {}
    for key in submits:
        job = get_json(f"{url}/v1/jobs/{key}")
        states[job["state"]] = states.get(job["state"], 0) + 1
        created.append(job["created_at"])
        if job.get("finished_at"):
            finished.append(job["finished_at"])
        if not job["attempts"]:
            continue
        attempt = job["attempts"][0]
        if attempt.get("running_at"):
            record_ms.append(attempt["running_at"] - job["created_at"])
        if attempt.get("workers_started_at"):
            workers_ms.append(attempt["workers_started_at"] - job["created_at"])
        if attempt.get("external_id"):
            slurm_ids[key] = attempt["external_id"]
        if attempt.get("external_submitted_at"):
            # Under an external executor: when sbatch returned the job's id (Drover's clock).
            handoff_ms.append(attempt["external_submitted_at"] - job["created_at"])
    result["states"] = states
    result["record_submit_to_start_ms"] = percentiles(record_ms)
    result["record_submit_to_workers_started_ms"] = percentiles(workers_ms)
    result["record_submit_to_handoff_ms"] = percentiles(handoff_ms)
    result["record_first_submit_to_last_end_s"] = (
        (max(finished) - min(created)) / 1000.0 if finished and created else None
    )
    result["submit_to_start_split_ms"] = split_start(case_dir, slurm_ids)
    append(case_dir, result)


def append(case_dir, result):
    with open(os.path.join(os.path.dirname(case_dir), "results.jsonl"), "a") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps(result, indent=1))


def fmt_ms(p, scale=1.0, unit="ms", digits=0):
    if not p:
        return "n/a"
    return " / ".join(f"{p[k] * scale:,.{digits}f}" for k in ("p50", "p95", "max")) + f" {unit}"


def handoffs(rows):
    for r in rows:
        if r.get("record_submit_to_handoff_ms"):
            print(
                f"- {r['case']}: created_at to sbatch's return (external_submitted_at), "
                f"p50 / p95 / max: {fmt_ms(r['record_submit_to_handoff_ms'])}"
            )


def splits(rows):
    for r in rows:
        split = r.get("submit_to_start_split_ms")
        if split:
            print(
                f"- {r['case']}: submit-to-start by slurmctld's log ({split['to_slurm']['n']} jobs), "
                f"p50 / p95 / max: until Slurm received it {fmt_ms(split['to_slurm'])}; "
                f"in Slurm until started {fmt_ms(split['in_slurm'])}; "
                f"the start until the job's line {fmt_ms(split['script'])}"
            )


def cpu_table(rows):
    rows = [r for r in rows if r.get("cpu_per_job_ms")]
    if not rows:
        return
    print()
    print(
        "| case | CPU per job: the submitting command | slurmctld | Drover's server with its "
        "children (the helper; a local queue's jobs) | the rest (slurmd, slurmstepd, the job, "
        "munged) | the machine | the machine busy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cpu = r["cpu_per_job_ms"]
        cells = " | ".join(
            f"{cpu[name]:,.1f} ms" for name in ("client", "slurmctld", "drover", "rest", "machine")
        )
        busy = "n/a" if cpu["busy"] is None else f"{cpu['busy'] * 100:.0f}%"
        print(f"| {r['case']} | {cells} | {busy} |")


def report(work_dir):
    rows = []
    with open(os.path.join(work_dir, "results.jsonl")) as f:
        for line in f:
            rows.append(json.loads(line))
    print(
        "| case | jobs | submission: time, jobs/s | submit-to-start, the scheduler's record "
        "(p50 / p95 / max) | submit-to-start, client clock to the job's first line "
        "(p50 / p95 / max) | until all finished | end states |"
    )
    print("|---|---:|---|---|---|---|---|")
    for r in rows:
        if "record_submit_to_start_s" in r:
            record = fmt_ms(r["record_submit_to_start_s"], unit="s")
        else:
            record = fmt_ms(r["record_submit_to_start_ms"])
        states = ", ".join(f"{v} {k}" for k, v in sorted(r["states"].items()))
        record_end = r.get("record_first_submit_to_last_end_s")
        print(
            f"| {r['label']} | {r['n']:,} | {r['submit_s']:.2f} s, {r['submit_per_s']:,.1f}/s | "
            f"{record} | {fmt_ms(r['client_submit_to_start_ms'])} | "
            f"{r['all_done_s']:.1f} s (records: "
            f"{record_end if record_end is None else f'{record_end:.1f} s'}"
            + (f"; Slurm's queue empty at {r['slurm_all_done_s']:.1f} s" if "slurm_all_done_s" in r else "")
            + ") | "
            f"{states} ({r['started']:,} started) |"
        )
    cpu_table(rows)
    print()
    handoffs(rows)
    splits(rows)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "slurm" and len(sys.argv) == 3:
        slurm(os.path.abspath(sys.argv[2]))
    elif command == "drover" and len(sys.argv) == 4:
        drover(os.path.abspath(sys.argv[2]), sys.argv[3])
    elif command == "report" and len(sys.argv) == 3:
        report(sys.argv[2])
    else:
        sys.exit(__doc__)
