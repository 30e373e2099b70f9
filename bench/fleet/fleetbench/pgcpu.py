"""PostgreSQL's CPU split by database, for a PostgreSQL that serves two clients' databases (over
gRPC: ours, `mmi`, and the Maestro server's, `maestro`, in the same postmaster).

PostgreSQL keeps no CPU figure per database, but each backend serves one database and says which
in its process title (`postgres: <user> <database> <host>(<port>) <activity>`). So a sampler reads
every child of the postmaster four times a second and keeps each backend's last CPU reading under
its database. Backends come and go (Go's database/sql keeps two idle connections by default and
closes the rest when they are returned, so Maestro's pool churns under load); the CPU a backend
used after its last reading is not lost from the total, because the postmaster reaps its
children and the kernel adds their CPU to its cutime/cstime. What the readings cannot place (that
remainder, the postmaster itself and the background processes: checkpointer, WAL writer,
autovacuum) is reported as `shared`, and `attribute()` splits it by weights (pg_stat_database's
time spent in statements per database) or in proportion to each database's backends.
"""

import re
import threading
import time

from .procstat import children, cpu_times

_TITLE = re.compile(r'^postgres: (\S+) (\S+) ')
BACKGROUND = 'background'  # checkpointer, walwriter, autovacuum, ... (no database of their own)


def classify(title, databases):
    """The database a postmaster child serves, from its process title, or BACKGROUND."""
    m = _TITLE.match(title)
    if m and m.group(2) in databases:
        return m.group(2)
    # an autovacuum worker names its database after its kind ("autovacuum worker maestro")
    for db in databases:
        if title.startswith('postgres: autovacuum worker') and title.rstrip().endswith(f' {db}'):
            return db
    return BACKGROUND


def _title(pid):
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return f.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
    except OSError:
        return ''


class PgCpuSampler:
    """Samples the postmaster's children every `interval_s` on its own thread; snapshot() gives
    cumulative CPU seconds by database (every backend ever seen, at its last reading), the
    exact total and the rest. Thread-safe; stop() is idempotent."""

    def __init__(self, postmaster_pid, databases, interval_s=0.25):
        self.pid = postmaster_pid
        self.databases = tuple(databases)
        self.interval_s = interval_s
        self._seen = {}  # (pid, starttime) -> [group, last cpu seconds]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name='pg-cpu-sampler')

    def start(self):
        self.sample()
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self):
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self):
        """One reading of every child (also called by snapshot(), so a window ends exactly)."""
        readings = []
        for child in children(self.pid):
            st = cpu_times(child)
            if st is None:
                continue
            readings.append(((child, st[2]), st[0], child))
        with self._lock:
            for key, cpu, child in readings:
                entry = self._seen.get(key)
                if entry is None:
                    entry = self._seen[key] = [classify(_title(child), self.databases), 0.0]
                entry[1] = max(entry[1], cpu)

    def snapshot(self):
        """{'by_group': {database or BACKGROUND: cpu s}, 'total': postmaster + every child ever
        (exact), 'shared': total minus the databases' backends}, cumulative since the start."""
        self.sample()
        own = cpu_times(self.pid)
        live = sum(s[0] for s in (cpu_times(c) for c in children(self.pid)) if s is not None)
        with self._lock:
            groups = {}
            for group, cpu in self._seen.values():
                groups[group] = groups.get(group, 0.0) + cpu
        total = (own[0] + own[1] + live) if own else sum(groups.values())
        attributed = sum(v for k, v in groups.items() if k != BACKGROUND)
        return {'by_group': groups, 'total': total, 'shared': max(0.0, total - attributed),
                't': time.monotonic()}


def attribute(before, after, databases, weights=None):
    """The window between two snapshots: CPU seconds of each database's backends as read, the
    rest (postmaster, background processes, and backends that exited between readings: a pool
    that opens and closes connections leaves most of its CPU there), and each database's share
    with that rest split by `weights` ({database: weight}, e.g. pg_stat_database's active_time
    over the window), else in proportion to the backends' CPU."""
    delta = {db: max(0.0, after['by_group'].get(db, 0.0) - before['by_group'].get(db, 0.0))
             for db in databases}
    total = max(0.0, after['total'] - before['total'])
    background = max(0.0, after['by_group'].get(BACKGROUND, 0.0) -
                     before['by_group'].get(BACKGROUND, 0.0))
    shared = max(0.0, total - sum(delta.values()))
    w = {db: max(0.0, (weights or {}).get(db, 0.0)) for db in databases}
    split_by = 'weights'
    if not sum(w.values()):
        w, split_by = dict(delta), 'backends'
    if not sum(w.values()):
        w, split_by = {db: 1.0 for db in databases}, 'evenly'
    wsum = sum(w.values())
    return {'total_cpu_seconds': round(total, 2), 'shared_cpu_seconds': round(shared, 2),
            'background_cpu_seconds': round(background, 2),
            'backends_cpu_seconds': {db: round(v, 2) for db, v in delta.items()},
            'shared_split_by': split_by,
            'with_shared_split_cpu_seconds': {db: round(delta[db] + shared * w[db] / wsum, 2)
                                              for db in databases}}
