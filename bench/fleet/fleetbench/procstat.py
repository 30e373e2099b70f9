"""RSS and CPU seconds of a process (optionally with its descendants) from /proc."""

import os

_TICKS = os.sysconf('SC_CLK_TCK')


def children(pid):
    """The pids of pid's child processes (of every thread), [] when pid is gone."""
    out = []
    try:
        for tid in os.listdir(f'/proc/{pid}/task'):
            try:
                with open(f'/proc/{pid}/task/{tid}/children') as f:
                    out.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(pid):
    """pid and every descendant (PostgreSQL's backends are children of the postmaster)."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(children(p))
    return seen


def cpu_times(pid):
    """(own CPU seconds: utime + stime, CPU seconds of its reaped children: cutime + cstime,
    start time in ticks since boot: with the pid, a process's identity), or None when gone."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            stat = f.read()
        fields = stat[stat.rindex(')') + 2:].split()
        return ((int(fields[11]) + int(fields[12])) / _TICKS,
                (int(fields[13]) + int(fields[14])) / _TICKS, int(fields[19]))
    except (OSError, ValueError, IndexError):
        return None


def one(pid):
    """{'rss_bytes', 'cpu_seconds'} of one process, or None when it is gone."""
    times = cpu_times(pid)
    if times is None:
        return None
    cpu = times[0]
    try:
        rss = 0
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    rss = int(line.split()[1]) * 1024
                    break
        return {'rss_bytes': rss, 'cpu_seconds': cpu}
    except (OSError, ValueError, IndexError):
        return None


def peak_rss_bytes(pid):
    """The most RSS the process ever had (VmHWM), or None when it is gone."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss_mib(pid):
    """peak_rss_bytes in MiB (one decimal), or None when the process is gone."""
    peak = peak_rss_bytes(pid)
    return None if peak is None else round(peak / 1048576.0, 1)


def stats(pid, with_children=False):
    """Summed RSS and CPU seconds of pid (and its descendants), or None when pid is gone.

    CPU seconds of descendants that already exited are not counted (short-lived backends).
    """
    if pid is None:
        return None
    pids = tree(pid) if with_children else [pid]
    return summed(one(p) for p in pids)


def summed(stats_list):
    """Several processes' figures as one (those gone, None, left out), or None when all are:
    one() of each process, or stats() of several trees."""
    acc = None
    for s in stats_list:
        if s is None:
            continue
        acc = acc or {'rss_bytes': 0, 'cpu_seconds': 0.0, 'processes': 0}
        for k in acc:
            acc[k] += s.get(k, 1) if k == 'processes' else s[k]
    return acc


def swap_used_bytes():
    """Swap in use on the machine (SwapTotal - SwapFree), or None when /proc says nothing."""
    try:
        with open('/proc/meminfo') as f:
            kib = {k: int(v.split()[0]) for k, v in (line.split(':', 1) for line in f)}
        return (kib['SwapTotal'] - kib['SwapFree']) * 1024
    except (OSError, KeyError, ValueError):
        return None
