"""proc_cpu - CPU seconds from /proc for the benchmarks (bench_samples.py, bench_sessions.py):
a process's own, and a Postgres cluster's (its postmaster, reaped and live backends), so that a
benchmark reports what its load cost the server and the database apart. Linux only."""
import os

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid, children=False):
    """utime + stime of `pid` in seconds (and of its exited, waited-for children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    t = int(fields[11]) + int(fields[12])
    if children:
        t += int(fields[13]) + int(fields[14])
    return t / TICK


def cluster_cpu_s(postmaster):
    """CPU seconds of a Postgres cluster: the postmaster, its reaped children, live ones."""
    total = proc_cpu_s(postmaster, children=True)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        total += proc_cpu_s(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return total
