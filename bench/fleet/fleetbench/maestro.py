"""Scenario (a) over gRPC: the Maestro server's cost next to ours (issue #40 item 5).

`MaestroProbe` watches the Maestro server through the cold start: PostgreSQL's CPU split by
database (pgcpu: Maestro's database `maestro` and ours share one postmaster in the stack) and a
perf profile of the server process. `cost_figures()` is pure: the window's process figures and the
PostgreSQL split in, the report's `maestro` section out.
"""

import os
import urllib.request

from . import prom
from .goals import OURS_OVER_MAESTRO
from .perfprofile import PerfRecorder
from .pgcpu import PgCpuSampler, attribute

OURS = ('dispatcher', 'status-sink')
MAESTRO_DB = 'maestro'
# Maestro's own histograms of the pinned version (pkg/controllers/metrics.go): each controller
# handles its events on one worker (framework.go, status_controller.go: one wait.Until(runWorker)),
# so the time they add up to over a window says how busy that worker was.
CONTROLLER_HISTOGRAMS = {
    'spec events to the agents (KindControllerManager, one worker)':
        'spec_controller_event_reconcile_duration_seconds',
    'status events to the sources (StatusController, one worker)':
        'status_controller_event_reconcile_duration_seconds',
}
# k8s.io/client-go workqueue metrics as Maestro registers them (metrics.go: SetProvider)
WORKQUEUE = 'workqueue_'
# What a profile sample's stack shows Maestro serving (inclusive; a sample may count in two).
WORK_PATHS = (
    ('agent status reports from MQTT (server.handleStatusUpdate)',
     'maestro/cmd/maestro/server.handleStatusUpdate'),
    ('our Publish calls on the gRPC source API (GRPCServer.Publish)',
     'maestro/cmd/maestro/server.(*GRPCServer).Publish'),
    ('spec events to the agents (KindControllerManager.handleEvent)',
     'maestro/pkg/controllers.(*KindControllerManager).handleEvent'),
    ('status events to the sources (StatusController.handleStatusEvent)',
     'maestro/pkg/controllers.(*StatusController).handleStatusEvent'),
    ('event broadcast to source subscribers (EventBroadcaster)',
     'maestro/pkg/event.(*EventBroadcaster)'),
    ('advisory locks (pkg/db)', 'maestro/pkg/db.'),
    ('new PostgreSQL connections (pgx stdlib connector)',
     'github.com/jackc/pgx/v5/stdlib.(*connector).Connect'),
    ('PostgreSQL statements (gorm processor)', 'gorm.io/gorm.(*processor).Execute'),
    ('garbage collection (background workers)', 'runtime.gcBgMarkWorker'),
)


class MaestroProbe:
    """Owned by scenario (a) over gRPC: start() before its first snapshot, pg_snapshot() with
    each snapshot, stop_profile() when the window to profile ends, summary() at the end."""

    def __init__(self, stack, work_dir, perf_seconds):
        self.stack = stack
        self.our_db = stack.pg_env.get('PG_DB', 'mmi')
        self.sampler = PgCpuSampler(stack.pid('postgres'), (MAESTRO_DB, self.our_db))
        self.maestro_pid = stack.pid('maestro')
        # every instance's /metrics (--maestro-replicas); the profile is of the first only
        env = stack.maestro_env
        self.metrics_urls = [u for u in env.get('MAESTRO_METRICS_URLS',
                                                env.get('MAESTRO_METRICS_URL', '')).split(',') if u]
        self.recorder = (PerfRecorder(self.maestro_pid, os.path.join(work_dir, 'maestro-perf.data'),
                                      max_seconds=perf_seconds, paths=WORK_PATHS)
                         if perf_seconds > 0 else None)

    def start(self):
        self.sampler.start()
        if self.recorder:
            self.recorder.start()
        return self

    def pg_snapshot(self):
        """PostgreSQL's CPU by database, pg_stat_database and Maestro's /metrics, now."""
        snap = self.sampler.snapshot()
        snap['pg_stat_database'] = self.pg_stat_database()
        snap['maestro_metrics_by_instance'] = [self.maestro_metrics(u) for u in self.metrics_urls]
        snap['maestro_metrics'] = merged(snap['maestro_metrics_by_instance'])
        return snap

    @staticmethod
    def maestro_metrics(url):
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return prom.parse(r.read().decode('utf-8', 'replace'))
        except OSError:
            return {}

    def pg_stat_database(self):
        """Per database: sessions opened, and the milliseconds its backends spent in statements
        (active_time) and in sessions, from pg_stat_database (PostgreSQL 14+)."""
        out = {}
        try:
            text = self.stack.psql(
                'SELECT datname, sessions, active_time, session_time, xact_commit '
                f"FROM pg_stat_database WHERE datname IN ('{MAESTRO_DB}', '{self.our_db}')")
        except Exception:  # noqa: BLE001 - the split falls back to the backends' CPU
            return out
        for line in text.splitlines():
            parts = line.split('|')
            if len(parts) == 5:
                out[parts[0]] = {'sessions': int(parts[1]), 'active_ms': float(parts[2]),
                                 'session_ms': float(parts[3]), 'commits': int(parts[4])}
        return out

    def stop_profile(self):
        if self.recorder:
            self.recorder.stop()

    def close(self):
        """Stops the sampler and perf (idempotent): a scenario that broke off leaves neither."""
        self.sampler.stop()
        self.stop_profile()

    def summary(self, pg_before, pg_after):
        self.sampler.stop()
        dbs = (MAESTRO_DB, self.our_db)
        stat = {db: {k: v - pg_before['pg_stat_database'].get(db, {}).get(k, 0)
                     for k, v in pg_after['pg_stat_database'].get(db, {}).items()} for db in dbs}
        split = attribute(pg_before, pg_after, dbs,
                          {db: stat[db].get('active_ms', 0.0) for db in dbs})
        split['pg_stat_database_delta'] = stat
        seconds = pg_after['t'] - pg_before['t']
        instances = len(self.metrics_urls)
        out = {'pg_split': split, 'maestro_pid': self.maestro_pid, 'instances': instances,
               'controllers': controller_figures(pg_before['maestro_metrics'],
                                                 pg_after['maestro_metrics'], seconds,
                                                 max(1, instances))}
        if instances > 1:
            out['controllers_by_instance'] = [
                controller_figures(b, a, seconds) for b, a in zip(
                    pg_before['maestro_metrics_by_instance'],
                    pg_after['maestro_metrics_by_instance'])]
        if self.recorder:
            out['perf'] = self.recorder.summary()
        return out


def maestro_failures(m, delivered):
    """What makes a gRPC cold start no measurement of Maestro: no CPU read for its process or
    its database, or (once every Application reached its agent) no spec event counted by its
    controller (its /metrics unread)."""
    out = []
    cost = m.get('cost', {})
    if not cost.get('maestro_process_cpu_seconds'):
        out.append("no CPU read for the Maestro server's process")
    if not m.get('pg_split', {}).get('total_cpu_seconds'):
        out.append("no PostgreSQL CPU read (Maestro's database share unknown)")
    spec = m.get('controllers', {}).get(next(iter(CONTROLLER_HISTOGRAMS)), {})
    if delivered and not spec.get('events'):
        out.append("Maestro's spec controller counted no event (its /metrics unread?)")
    return out


def merged(snapshots):
    """Several instances' /metrics as one snapshot: their series side by side, so that totals
    and deltas (prom.total, counter_delta) sum over the instances."""
    out = {}
    for snap in snapshots:
        for name, series in snap.items():
            out.setdefault(name, []).extend(series)
    return out


def controller_figures(before, after, seconds, workers=1):
    """Events each Maestro controller handled over the window and the seconds its handlers took
    (its reconcile histogram, which starts after the event's lock and read); and per work queue
    (`event-controller`, `status-event-controller`) the items, retries, the seconds its worker
    held items (Get to Done: all of the work) as a share of the window, and the mean wait.
    `workers`: how many instances the snapshots sum (each has one worker per queue), so the
    busy share is per worker."""
    out = {}
    for what, base in CONTROLLER_HISTOGRAMS.items():
        count = prom.counter_delta(before, after, base + '_count')
        busy = prom.counter_delta(before, after, base + '_sum')
        out[what] = {'events': int(count), 'handler_seconds': round(busy, 2),
                     'handler_mean_ms': round(1000.0 * busy / count, 1) if count else None}

    def by_queue(name):
        return {k[0]: v for k, v in prom.delta_by_label(before, after, name,
                                                        ('queue_name',)).items()}

    work_s, work_n = by_queue(WORKQUEUE + 'work_duration_seconds_sum'), by_queue(
        WORKQUEUE + 'work_duration_seconds_count')
    wait_s, wait_n = by_queue(WORKQUEUE + 'queue_duration_seconds_sum'), by_queue(
        WORKQUEUE + 'queue_duration_seconds_count')
    adds, retries = by_queue(WORKQUEUE + 'adds_total'), by_queue(WORKQUEUE + 'retries_total')
    out['work_queues'] = {
        q: {'items': int(work_n.get(q, 0)), 'adds': int(adds.get(q, 0)),
            'retries': int(retries.get(q, 0)), 'work_seconds': round(work_s.get(q, 0.0), 2),
            'worker_busy_share_of_window': round(work_s.get(q, 0.0) / (seconds * workers), 3)
            if seconds else None,
            'work_mean_ms': round(1000.0 * work_s[q] / work_n[q], 1) if work_n.get(q) else None,
            'wait_mean_ms': round(1000.0 * wait_s[q] / wait_n[q], 1) if wait_n.get(q) else None}
        for q in sorted(set(work_n) | set(adds))}
    return out


def cost_figures(processes, pg_split, applications, our_db='mmi'):
    """Our CPU (dispatcher + status-sink) and Maestro's (its process, and with its share of
    PostgreSQL) over the window, per Application, and ours over Maestro's next to the goal."""
    ours = sum(processes.get(p, {}).get('cpu_seconds', 0.0) for p in OURS)
    maestro_proc = processes.get('maestro', {}).get('cpu_seconds', 0.0)
    maestro_pg = pg_split['with_shared_split_cpu_seconds'].get(MAESTRO_DB, 0.0)
    our_pg = pg_split['with_shared_split_cpu_seconds'].get(our_db, 0.0)
    maestro = maestro_proc + maestro_pg
    us = 1e6 / max(1, applications)

    def ratio(a, b):
        return round(a / b, 3) if b else None

    out = {
        'ours_cpu_seconds': round(ours, 2),
        'ours_by_process_cpu_seconds': {p: processes.get(p, {}).get('cpu_seconds') for p in OURS},
        'maestro_process_cpu_seconds': round(maestro_proc, 2),
        'maestro_postgres_cpu_seconds': round(maestro_pg, 2),
        'maestro_cpu_seconds': round(maestro, 2),
        'our_postgres_cpu_seconds': round(our_pg, 2),
        'ours_us_per_application': round(ours * us, 1),
        'maestro_us_per_application': round(maestro * us, 1),
        'maestro_process_us_per_application': round(maestro_proc * us, 1),
        'ours_over_maestro': ratio(ours, maestro),
        'ours_over_maestro_process_only': ratio(ours, maestro_proc),
        # the same with each side's PostgreSQL share (our store is PostgreSQL too)
        'ours_with_postgres_over_maestro': ratio(ours + our_pg, maestro),
        'goal_ours_over_maestro': f'<= {OURS_OVER_MAESTRO}',
    }
    r = out['ours_over_maestro']
    out['goal_met'] = None if r is None else r <= OURS_OVER_MAESTRO
    return out


def rates(res):
    """The cold dispatch rates of a finished scenario (a): accepted by the transport (Maestro's
    Publish answered, or the broker's PUBACK), on the agents, every status on the hub."""
    n = res.get('applications') or 0
    out = {}
    for key, at in (('published_per_s', 'all_published_s'), ('on_agents_per_s', 'all_on_spokes_s'),
                    ('acknowledged_per_s', 'all_acknowledged_s')):
        t = res.get(at)
        out[key] = round(n / t, 1) if t else None
    return out


def compare(grpc_a, mqtt_a):
    """gRPC's cold dispatch rates over MQTT's, measured one after the other in one invocation."""
    g, m = rates(grpc_a), rates(mqtt_a)
    return {'grpc': g, 'mqtt': m,
            'grpc_over_mqtt': {k: (round(g[k] / m[k], 3) if g[k] and m[k] else None) for k in g}}
