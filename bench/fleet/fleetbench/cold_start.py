"""Scenario (a): the dispatcher started on the full hub, until every Application is published,
held by its simulated agent and acknowledged; then a check of the hub objects themselves."""

import random
import signal
import threading
import time

from . import prom
from .common import NS, log, mib
from .hub import APPS, parallel
from .maestro import MaestroProbe, cost_figures, maestro_failures, rates
from .window import process_figures, window


class ColdStartMixin:
    """Part of FleetBench: scenario (a)."""

    def scenario_a(self):
        st, n = self.stack, self.n_apps
        log('(a) cold start: fleet-sim and status-sink, then the dispatcher')
        st.start_fleet_sim(self.fleet_args())
        st.start_status_sink()
        # gRPC: Maestro's CPU (its process, its share of PostgreSQL) and a profile of it
        probe = self.maestro_probe = (
            MaestroProbe(st, self.args.work_dir, self.args.perf_seconds).start()
            if self.args.transport == 'grpc' else None)
        pg_before = probe.pg_snapshot() if probe else None
        before = self.snapshot()
        t0 = time.monotonic()
        started = self.start_async('dispatcher')
        res = {'applications': n, 'failures': []}
        times, peak, at_pub = self.await_cold_start(t0, started, res)
        not_ready = self.wait_ready('dispatcher', started, 60)
        res['dispatcher_ready_s'] = started['ready_s']
        if not_ready:
            res['failures'].append(not_ready)
        after = self.snapshot()
        pg_after = probe.pg_snapshot() if probe else None
        res['mosquitto_dropped_publishes'] = self.mosquitto_dropped()
        t_pub, t_spoke, t_ack = times['published'], times['on_spokes'], times['acknowledged']
        res.update({'all_published_s': t_pub and round(t_pub, 1),
                    'all_on_spokes_s': t_spoke and round(t_spoke, 1),
                    'all_acknowledged_s': t_ack and round(t_ack, 1)})
        if t_pub:
            res['dispatch_throughput_per_s'] = round(n / t_pub, 1)
        if t_ack:
            res['acknowledged_throughput_per_s'] = round(n / t_ack, 1)
        fs_stop = getattr(self, 'fleet_sim_before_restart', None)
        res['window'] = window(before, after, restarted={
            'fleet-sim': {'metrics': {'fleet-sim': fs_stop}, 'procs': {}}} if fs_stop else None)
        res['peak_rss_mib'] = {k: mib(v) for k, v in peak.items()}
        if at_pub:
            res['processes_until_all_published'] = process_figures(
                before, at_pub, {}, max(1e-9, at_pub['t'] - before['t']))
        # The sampled peak can miss a short spike; the kernel's high-water mark cannot.
        res['dispatcher_peak_rss_mib'] = self.peak_rss_mib('dispatcher')
        res['postgres'] = self.pg_tables()
        if probe:
            res['maestro'] = self.maestro_section(probe, pg_before, pg_after, res)
            res['failures'] += maestro_failures(res['maestro'], t_spoke is not None)
        if t_ack is not None:
            res['hub_check'] = self.verify_hub_statuses()
            if res['hub_check'].get('without_status', 0):
                res['failures'].append(
                    f"{res['hub_check']['without_status']} hub Applications without a status")
        return res

    def maestro_section(self, probe, pg_before, pg_after, res):
        """gRPC: Maestro's CPU next to ours over (a)'s window (from the dispatcher's start until
        every status is on the hub), the cold dispatch rates and the profile."""
        m = probe.summary(pg_before, pg_after)
        m['cost'] = cost_figures(res['window']['processes'], m['pg_split'], self.n_apps,
                                 probe.our_db)
        m['rates'] = rates(res)
        m['attribution'] = (
            "Maestro's CPU = its server process + its database's PostgreSQL backends (process "
            'titles, read 4 times a second) + a share of the rest of PostgreSQL (postmaster, '
            'background processes, backends that exited between readings; the total is exact: '
            "the postmaster's own and its reaped children's CPU) in proportion to each "
            "database's time in statements over the window (pg_stat_database.active_time); "
            'ours = dispatcher + status-sink (their PostgreSQL share reported beside it)')
        return m

    def await_cold_start(self, t0, started, res):
        """From t0 (the dispatcher's start), polls until every Application is published, on its spoke and acknowledged (or a
        process exits, or --timeout). Returns ({'published', 'on_spokes', 'acknowledged'}: seconds
        or None, peak RSS by process); failures go to res."""
        n = self.n_apps
        times = {'published': None, 'on_spokes': None, 'acknowledged': None}
        at_pub = None
        last_log = 0.0
        peak = {}
        spoke_seen, spoke_since, recovered = -1, time.monotonic(), False
        while True:
            time.sleep(2)
            el = time.monotonic() - t0
            published, acked = self.pg_progress()
            spoke = int(self.fleet_gauge('mmi_fleet_sim_applications'))
            if spoke != spoke_seen:
                spoke_seen, spoke_since = spoke, time.monotonic()
            if (published >= n and spoke < n and not recovered and
                    time.monotonic() - spoke_since > self.args.stall_seconds):
                recovered = True
                self.recover_lost_spec_events(res, spoke, el)
                continue
            procs = self.proc_stats()
            for name, s in procs.items():
                peak[name] = max(peak.get(name, 0), s['rss_bytes'])
            for key, value in (('published', published), ('on_spokes', spoke), ('acknowledged', acked)):
                if times[key] is None and value >= n:
                    times[key] = el
                    if key == 'on_spokes' and getattr(self, 'maestro_probe', None):
                        # the profile covers the dispatch through Maestro to the agents
                        self.maestro_probe.stop_profile()
                    if key == 'published':
                        # who had the cores while the dispatcher published (its rate's bound)
                        at_pub = {'t': time.monotonic(), 'procs': procs}
            if el - last_log >= 30:
                last_log = el
                log(f'  {el:.0f} s: published {published}, on spokes {spoke}, '
                    f'acknowledged on the hub {acked} / {n}')
            if all(v is not None for v in times.values()):
                break
            if self.cold_start_broke_off(started, res, el, (published, spoke, acked)):
                break
        return times, peak, at_pub

    def recover_lost_spec_events(self, res, spoke, el):
        """Spec events the agents never received: nothing re-sends them (the dispatcher waits for
        no acknowledgement; agents ask for a spec resync only on (re)connect). Record it as a
        failure, then let fleet-sim reconnect so the rest of the bench runs on a complete fleet."""
        st, n = self.stack, self.n_apps
        fs = self.metrics('fleet-sim')
        res['failures'].append(
            f'{n - spoke} of {n} spec events never reached the simulated agents '
            f'({self.args.stall_seconds} s without progress; mosquitto dropped '
            f'{self.mosquitto_dropped()} publishes; fleet-sim publish failures '
            f"{int(prom.total(fs, 'mmi_fleet_sim_publish_failures_total'))}); "
            'recovered by restarting fleet-sim (spec resync on reconnect)')
        res['lost_spec_events'] = n - spoke
        res['recovery_fleet_sim_restart_at_s'] = round(el, 1)
        log(f'  {n - spoke} spec events lost; restarting fleet-sim (spec resync)')
        self.fleet_sim_before_restart = fs
        st.stop_process('fleet-sim', signal.SIGTERM, timeout=60)
        st.start_fleet_sim(self.fleet_args())

    def cold_start_broke_off(self, started, res, el, progress):
        """True when the cold start cannot complete: the dispatcher never started (wait_ready
        reports why), a process exited (a failure) or --timeout passed (a failure)."""
        st = self.stack
        if started['error'] is not None:
            return True
        dead = [x for x in ('status-sink', 'fleet-sim') if not st.running(x)]
        if started['ready_s'] is not None and not st.running('dispatcher'):
            dead.append('dispatcher')
        if dead:
            res['failures'].append(f'{", ".join(dead)} exited during the cold start '
                                   f'(logs: {self.args.work_dir}/logs)')
            return True
        if el > self.args.timeout:
            published, spoke, acked = progress
            res['failures'].append(f'timeout after {self.args.timeout} s: published '
                                   f'{published}, on spokes {spoke}, acknowledged {acked} '
                                   f'of {self.n_apps}')
            return True
        return False

    def verify_hub_statuses(self):
        """Every hub Application carries the agent's status (sync and health)."""
        t = time.monotonic()
        counts = {'checked': 0, 'without_status': 0}

        def check(app):
            s = app.get('status') or {}
            counts['checked'] += 1
            if not (s.get('sync') or {}).get('status') or not (s.get('health') or {}).get('status'):
                counts['without_status'] += 1

        counts['method'] = self.each_hub_application(check, seed=7)
        counts['seconds'] = round(time.monotonic() - t, 1)
        return counts

    def each_hub_application(self, fn, seed):
        """fn(app) for every hub Application, one at a time: a paged LIST of all of them up to
        --verify-list-max Applications, else GETs of a random sample (drawn with `seed`) of
        --verify-sample. Returns how they were read."""
        if self.n_apps <= self.args.verify_list_max:
            self.hub.list_all(f'{APPS}/namespaces/{NS}/applications', resource='applications',
                              fn=fn)
            return 'LIST of every Application'
        rnd = random.Random(seed)
        names = [f'{rnd.choice(self.clusters)}-{rnd.choice(self.appsets)}'
                 for _ in range(self.args.verify_sample)]
        lock = threading.Lock()

        def get(name):
            app = self.hub.get_json(f'{APPS}/namespaces/{NS}/applications/{name}',
                                    resource='applications')
            with lock:
                fn(app)

        parallel(names, get, 8)
        return f'GET of {len(names)} random Applications'
