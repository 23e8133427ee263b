#!/usr/bin/env python3
"""What a listing of Slurm's jobs costs slurmctld (docs/benchmarks.md, "Listings only when a job
changed"; issue 24): the Slurm executor's refresh asks `drover-slurm-submit` for Slurm's jobs,
which asks slurmctld again only when some job changed since its last listing.

Starts the benchmark's Slurm cluster (tests/slurm/slurm-cluster.sh in /tmp/drover-slurm-bench on
port 7917, as bench/slurm_side_by_side.sh; stopped at the end), submits JOBS held jobs (`sbatch
--hold`, so none changes afterwards), then lists them ROUNDS times each way:
  scontrol   `scontrol show job -o`, a process and a full listing each time
  helper     the helper's listing requests on its socket (descriptor 3), as the executor sends
             them: whole listings (while a job it tracks is pending), then listings if changed
             (the rest of the time: "same" while no job changed, after one whole listing)
and prints, per way, the median and slowest round trip on the client's side, the CPU time of
the listing processes (scontrol's, or the helper's) and slurmctld's own time for the listing
RPCs (sdiag's REQUEST_JOB_INFO, reset before each way). Run as root, not
beside the Slurm test suite.

  bench/slurm_listing_rpc.py HELPER [JOBS] [ROUNDS]
      e.g. bench/slurm_listing_rpc.py build/drover-slurm-submit 1000 50
"""

import os
import resource
import socket
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "tests", "slurm", "slurm-cluster.sh")


def run(*argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs).stdout


def job_info_rpc():
    """sdiag's REQUEST_JOB_INFO line: (count, total microseconds)."""
    for line in run("sdiag").splitlines():
        if line.strip().startswith("REQUEST_JOB_INFO "):
            fields = dict(
                word.split(":", 1) for word in line.split()[2:] if ":" in word
            )
            return int(fields["count"]), int(fields["total_time"])
    return 0, 0


def frame(payload):
    return struct.pack("<I", len(payload)) + payload


def read_frame(sock):
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("the helper closed its socket")
            data += chunk
        return data

    (length,) = struct.unpack("<I", exactly(4))
    return exactly(length)


def children_cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000.0


def process_cpu_ms(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def measure(name, list_once, rounds, cpu_ms):
    """cpu_ms(): the CPU so far of whatever lists (the scontrol processes, or the helper)."""
    run("sdiag", "--reset")
    times = []
    cpu_before = cpu_ms()
    for _ in range(rounds):
        start = time.perf_counter()
        text = list_once()
        times.append((time.perf_counter() - start) * 1000.0)
    cpu = cpu_ms() - cpu_before
    count, total_us = job_info_rpc()
    print(
        f"| {name} | {rounds} | {len(text):,} | {statistics.median(times):.2f} / "
        f"{max(times):.2f} ms | {cpu / rounds:.1f} ms | {count} | {total_us / 1000.0:.1f} ms "
        f"({total_us / max(count, 1) / 1000.0:.2f} ms each) |"
    )


def main():
    if len(sys.argv) < 2 or os.geteuid() != 0:
        sys.exit(__doc__)
    helper = os.path.abspath(sys.argv[1])
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    os.environ.setdefault("DROVER_SLURM_DIR", "/tmp/drover-slurm-bench")
    os.environ.setdefault("DROVER_SLURM_PORT", "7917")
    os.environ["SLURM_CONF"] = os.path.join(os.environ["DROVER_SLURM_DIR"], "slurm.conf")
    run(CLUSTER, "start")
    try:
        for _ in range(jobs):
            run("sbatch", "--hold", "--parsable", "-J", "bench-listing", "-o", "/dev/null",
                "--mem=100M", input="#!/bin/bash\ntrue\n")
        # The helper's end of the socket on its descriptor 3 (dup2 leaves the copy inheritable).
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        os.set_inheritable(child.fileno(), True)
        process = subprocess.Popen(
            [helper], close_fds=False,
            preexec_fn=lambda: child.fileno() == 3 or os.dup2(child.fileno(), 3))
        child.close()

        last = [b""]

        def by_helper(request):  # "same": the helper's last listing holds (the executor keeps it)
            parent.sendall(frame(request))
            reply = read_frame(parent)
            if reply.startswith(b"ok "):
                last[0] = reply[3:]
            elif reply != b"same":
                raise RuntimeError(reply[:200].decode(errors="replace"))
            return last[0]

        print(f"{jobs} held jobs in slurmctld; {rounds} listings each way\n")
        print("| listing | rounds | bytes | round trip, median / slowest | CPU of the lister "
              "per listing | slurmctld's REQUEST_JOB_INFO RPCs | their time in slurmctld |")
        print("|---|---:|---:|---|---|---:|---|")
        measure("`scontrol show job -o`", lambda: run("scontrol", "show", "job", "-o"), rounds,
                children_cpu_ms)

        def helper_cpu():
            return process_cpu_ms(process.pid)

        measure("the helper, whole listings", lambda: by_helper(b"jobs"), rounds, helper_cpu)
        measure("the helper, listings if changed", lambda: by_helper(b"jobs if changed"), rounds,
                helper_cpu)
        parent.close()
        process.wait(timeout=30)
    finally:
        subprocess.run([CLUSTER, "stop"], capture_output=True)


if __name__ == "__main__":
    main()
