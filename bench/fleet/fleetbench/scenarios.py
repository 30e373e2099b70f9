"""Scenarios (b) steady state, (c) restarts with nothing changed, (d) one ApplicationSet change
and (e) the dispatcher's CPU under status writes; each returns its part of the report."""

import signal
import threading
import time

from . import prom
from .common import NS, iso_now, log
from .hub import APPS, parallel
from .restart_probe import RestartChanges, RelistSampler
from .window import window


def warm_load(metrics):
    """(seconds, calls) of the dispatcher's dispatch-state loads in a /metrics snapshot, or
    (None, 0) when it has none."""
    where = {'operation': 'for_each_resource'}
    calls = int(prom.total(metrics, 'mmi_store_query_duration_seconds_count', where))
    if not calls:
        return None, 0
    return round(prom.total(metrics, 'mmi_store_query_duration_seconds_sum', where), 1), calls


class ScenariosMixin:
    """Part of FleetBench: scenarios (b) to (e)."""

    def scenario_b(self):
        dur = self.args.steady_seconds
        log(f'(b) steady state for {dur} s: refresh churn every {self.args.refresh_min}-'
            f'{self.args.refresh_max} s per Application + {self.changes_per_minute} real '
            f'changes per minute')
        before = self.snapshot()
        t0 = time.monotonic()
        while time.monotonic() - t0 < dur:
            time.sleep(min(30, dur - (time.monotonic() - t0)) if dur > 0 else 0)
            log(f'  {time.monotonic() - t0:.0f} s')
        after = self.snapshot()
        w = window(before, after)
        secs = w['seconds']
        sent = w['broker_messages']['fleet_sim_statuses_sent']
        res = {'seconds': secs, 'refresh_s': [self.args.refresh_min, self.args.refresh_max],
               'changes_per_minute': self.changes_per_minute,
               'status_events_per_second': round(sum(sent.values()) / secs, 1),
               'sink_events_received_per_second': round(
                   w['status_sink']['events_received'] / secs, 1),
               'hub_status_writes_per_second': w['status_sink']['hub_writes_per_second'],
               'window': w, 'postgres': self.pg_tables(), 'failures': []}
        republished = sum(w['dispatcher']['dispatches'].values())
        if republished:
            res['failures'].append(f'the dispatcher published {republished} events while only '
                                   'statuses changed')
        invalid = w['status_sink']['hub_writes'].get('invalid', 0)
        if invalid:
            res['failures'].append(f'{invalid} status writes refused by the hub (invalid)')
        # Issue 6: no polling. After start-up neither service reads Applications (the dispatcher
        # watches them; the sink never reads them): kube-apiserver's own counters, less the
        # bench's requests, must show no Application GET or LIST in the window.
        reads = {k: v for k, v in w['hub_requests']['excluding_bench_by_verb_resource'].items()
                 if k in ('GET applications', 'LIST applications')}
        res['application_reads_by_services'] = reads
        if reads:
            res['failures'].append(f'Application reads by the services in steady state: {reads}')
        self.steady = res
        return res

    def settle(self, name, max_s):
        """Waits until the restarted service's queues are empty and its counters stand still for
        `quiet` seconds (or max_s)."""
        t0 = time.monotonic()
        quiet, prev, stable_since = self.args.settle_quiet, None, time.monotonic()
        hub_lists, hub_checked = None, 0.0
        while time.monotonic() - t0 < max_s:
            time.sleep(1)
            m = self.metrics(name)
            if name == 'dispatcher':
                # Its informer may relist after the first sync (a 410 when its watch resumes:
                # the fifth full-scale run relisted 300,000 for 17 minutes after deciding on
                # all of them). Not settled while the hub serves LISTs of Applications (the
                # bench lists none here): they would count against the next restart's window.
                if time.monotonic() - hub_checked >= 5:
                    hub_checked = time.monotonic()
                    hub_lists = prom.total(self.metrics('kube-apiserver'),
                                           'apiserver_request_total',
                                           {'verb': 'LIST', 'resource': 'applications'})
                key = (prom.total(m, 'mmi_dispatcher_decisions_total'),
                       prom.total(m, 'mmi_dispatcher_dispatches_total'), hub_lists)
                busy = (prom.total(m, 'mmi_dispatch_queue_depth') +
                        prom.total(m, 'mmi_dispatcher_outbox_pending'))
                # Not before it decided on every Application of its initial list.
                begun = key[0] >= self.n_apps
            else:
                # The churn never stops, so the sink's counters never stand still: settled =
                # resync requested (its recovery) and its queues nearly empty for `quiet` s.
                key = None
                busy = prom.total(m, 'mmi_status_queue_depth') > 100
                begun = prom.total(m, 'mmi_status_resync_requests_total') > 0
            if not m or not begun or key != prev or busy:
                prev, stable_since = key, time.monotonic()
            elif time.monotonic() - stable_since >= quiet:
                break
        return round(time.monotonic() - t0, 1)

    def scenario_c(self):
        st = self.stack
        res = {'failures': []}
        steady_writes_per_s = (self.steady['window']['status_sink']['hub_writes'].get('ok', 0) /
                               self.steady['seconds']) if getattr(self, 'steady', None) else None
        for name in ('dispatcher', 'status-sink'):
            # The dispatcher's restart: Applications changed a while after its start (while it
            # may still list) must reach the broker at once (MQTT: timed at the broker).
            changes = None
            if name == 'dispatcher' and self.args.restart_changes > 0 and \
                    self.args.transport == 'mqtt':
                changes = RestartChanges(self, self.args.restart_changes,
                                         self.args.restart_change_after)
            log(f'(c) restart of {name} (SIGTERM, start again), nothing changed on the hub' +
                (f' but {len(changes.names)} Applications {changes.delay_s} s after its start'
                 if changes else ''))
            try:
                before = self.snapshot()
                at_stop = self.snapshot()
                # the outgoing process's high-water mark: it covers (a) and (b)
                peak_before_stop = self.peak_rss_mib(name)
                t0 = time.monotonic()
                rc = st.stop_process(name, signal.SIGTERM, timeout=self.args.stop_timeout)
                stop_s = time.monotonic() - t0
                started = self.start_async(name)
                sampler = RelistSampler(st, name, started) if name == 'dispatcher' else None
                if changes:
                    changes.start(started['t0'], started)
                settle_s = self.settle(name, self.args.settle_max)
                not_ready = self.wait_ready(name, started, 60)
                # The changes' arrivals before the window's end: their dispatches are in it.
                change_res = changes.result(300) if changes else None
            finally:
                if changes:
                    changes.watch.stop()
            after = self.snapshot()
            w = window(before, after, restarted={name: at_stop})
            r = {'exit_code': rc, 'stop_s': round(stop_s, 1),
                 'ready_after_start_s': started['ready_s'],
                 'settled_after_start_s': settle_s, 'window': w,
                 'peak_rss_before_stop_mib': peak_before_stop}
            if not_ready:
                res['failures'].append(not_ready)
            if rc != 0:
                res['failures'].append(f'{name} exited with {rc} on SIGTERM')
            if name == 'dispatcher':
                r['relist'] = sampler.result()
                # The new process's for_each_resource call is the load of its dispatch state
                # (the query and the rows' callbacks, not the start before it; None when the
                # series is missing); the Applications changed meanwhile are decided from their
                # own rows without waiting for it (decided_before_load).
                restarted_metrics = after['metrics'].get(name, {})
                r['warm_load_s'], r['warm_load_calls'] = warm_load(restarted_metrics)
                r['decided_before_load'] = int(prom.total(
                    restarted_metrics, 'mmi_dispatcher_decided_before_load_total'))
                changed = 0
                if change_res:
                    r['changes_during_restart'] = change_res
                    res['failures'].extend(change_res['failures'])
                    changed = change_res['patched']
                republished = sum(w['dispatcher']['dispatches'].values())
                published = sum(w['broker_messages']['dispatcher_published'].values())
                r['republished'] = max(0, republished - changed)
                r['events_published'] = published
                if republished > changed or published > changed:
                    res['failures'].append(f'dispatcher restart republished {republished} '
                                           f'(published events: {published}) for {changed} '
                                           'changed Applications')
            else:
                writes = w['status_sink']['hub_writes'].get('ok', 0)
                transitions = w['broker_messages']['fleet_sim_statuses_sent'].get('transition', 0)
                r['hub_writes'] = writes
                r['real_changes_in_window'] = transitions
                expected = transitions
                if steady_writes_per_s is not None:
                    expected = max(transitions, steady_writes_per_s * w['seconds'])
                    r['steady_state_writes_in_same_time'] = round(
                        steady_writes_per_s * w['seconds'])
                r['writes_beyond_steady_rate'] = max(0, round(writes - expected))
                # A restart that rewrote unchanged statuses writes a large part of the fleet.
                if writes - expected > 0.25 * self.n_apps:
                    res['failures'].append(f'status-sink restart wrote {writes} statuses; '
                                           f'expected about {round(expected)}')
                # Issue 6: the sink never reads Applications, not even while it starts.
                reads = {k: v for k, v in
                         w['hub_requests']['excluding_bench_by_verb_resource'].items()
                         if k in ('GET applications', 'LIST applications')}
                r['application_reads'] = reads
                if reads:
                    res['failures'].append(f'status-sink restart read Applications: {reads}')
            res[name.replace('-', '_')] = r
        return res

    def scenario_d(self):
        appset = self.appsets[0]
        names = [f'{c}-{appset}' for c in self.clusters]
        n = len(names)
        rev = f'fleet-bench-{int(time.time())}'
        log(f'(d) ApplicationSet {appset}: targetRevision -> {rev} on its {n} Applications')
        before = self.snapshot()
        t0 = time.monotonic()
        # What the ApplicationSet controller does: the template changes, every generated
        # Application is updated.
        self.hub.merge_patch(f'{APPS}/namespaces/{NS}/applicationsets/{appset}',
                             {'spec': {'template': {'spec': {'source': {'targetRevision': rev}}}}},
                             resource='applicationsets')

        def patch(name):
            status, body = self.hub.merge_patch(
                f'{APPS}/namespaces/{NS}/applications/{name}',
                {'spec': {'source': {'targetRevision': rev}}}, resource='applications')
            if status != 200:
                raise RuntimeError(f'PATCH {name}: HTTP {status}: {body[:200]!r}')

        done, failures, errors = parallel(names, patch, self.args.write_threads)
        t_patched = time.monotonic() - t0
        res = {'applications': n, 'target_revision': rev, 'hub_patches': done,
               'hub_patch_failures': failures, 'hub_patches_s': round(t_patched, 1),
               'failures': [f'{failures} hub patches failed: {errors[:2]}'] if failures else []}
        fs0 = prom.total(before['metrics'].get('fleet-sim', {}),
                         'mmi_fleet_sim_specs_received_total', {'action': 'update_request'})
        d0 = prom.total(before['metrics'].get('dispatcher', {}),
                        'mmi_dispatcher_dispatches_total', {'action': 'update', 'result': 'ok'})
        t_pub = t_spoke = t_hub = None
        remaining = set(names)
        lock = threading.Lock()

        def check(name):
            app = self.hub.get_json(f'{APPS}/namespaces/{NS}/applications/{name}',
                                    resource='applications')
            cmp = (((app.get('status') or {}).get('sync') or {}).get('comparedTo') or {})
            if (cmp.get('source') or {}).get('targetRevision') == rev:
                with lock:
                    remaining.discard(name)

        while True:
            el = time.monotonic() - t0
            if t_pub is None and prom.total(self.metrics('dispatcher'),
                                            'mmi_dispatcher_dispatches_total',
                                            {'action': 'update', 'result': 'ok'}) - d0 >= n:
                t_pub = el
            if t_spoke is None and prom.total(self.metrics('fleet-sim'),
                                              'mmi_fleet_sim_specs_received_total',
                                              {'action': 'update_request'}) - fs0 >= n:
                t_spoke = el
            if t_spoke is not None:
                # The hub status is back when its comparedTo names the new revision.
                parallel(sorted(remaining), check, 8)
                if not remaining:
                    t_hub = time.monotonic() - t0
                    break
            if el > self.args.timeout:
                res['failures'].append(f'timeout: published={t_pub is not None}, spokes='
                                       f'{t_spoke is not None}, hub statuses missing '
                                       f'{len(remaining)} of {n}')
                break
            time.sleep(1)
        after = self.snapshot()
        res.update({'all_published_s': t_pub and round(t_pub, 1),
                    'all_spokes_have_new_spec_s': t_spoke and round(t_spoke, 1),
                    'all_hub_statuses_back_s': t_hub and round(t_hub, 1),
                    'note': 'times from the first hub PATCH; the hub-status time is when a '
                            'polling pass of GETs by the bench found every status updated',
                    'window': window(before, after)})
        if t_hub:
            res['throughput_apps_per_s'] = round(n / t_hub, 1)
        return res

    def scenario_e(self):
        rate, dur = self.args.status_write_rate, self.args.status_write_seconds
        log(f'(e) idle dispatcher CPU for {self.args.idle_seconds} s, then {rate}/s status '
            f'writes for {dur} s ({self.args.write_threads} threads)')
        i0 = self.snapshot(('dispatcher',))
        time.sleep(self.args.idle_seconds)
        i1 = self.snapshot(('dispatcher',))
        idle_cpu = (i1['procs']['dispatcher']['cpu_seconds'] -
                    i0['procs']['dispatcher']['cpu_seconds']) / (i1['t'] - i0['t'])
        names = [f'{c}-{a}' for a in self.appsets[1:] or self.appsets for c in self.clusters]
        counter = {'next': 0, 'ok': 0, 'failed': 0}
        lock = threading.Lock()
        stop_at = [0.0]
        before = self.snapshot()
        t0 = time.monotonic()
        stop_at[0] = t0 + dur

        def worker():
            while True:
                with lock:
                    k = counter['next']
                    counter['next'] += 1
                due = t0 + k / float(rate)
                if due >= stop_at[0] or time.monotonic() >= stop_at[0]:
                    return  # the phase is over, whether or not the target rate was reached
                now = time.monotonic()
                if due > now:
                    time.sleep(due - now)
                name = names[k % len(names)]
                # A status-only change, as Argo CD (through the sink) makes: merge patch on the
                # main resource (no status subresource), which bumps generation.
                status, _ = self.hub.merge_patch(
                    f'{APPS}/namespaces/{NS}/applications/{name}',
                    {'status': {'reconciledAt': iso_now()}}, resource='applications')
                with lock:
                    counter['ok' if status == 200 else 'failed'] += 1

        threads = [threading.Thread(target=worker, daemon=True)
                   for _ in range(self.args.write_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        write_s = time.monotonic() - t0
        # Let the dispatcher finish the events it received.
        time.sleep(self.args.settle_quiet)
        after = self.snapshot()
        w = window(before, after)
        d = w['processes'].get('dispatcher', {})
        republished = sum(w['dispatcher']['dispatches'].values())
        res = {'target_writes_per_s': rate, 'write_seconds': round(write_s, 1),
               'writes_ok': counter['ok'], 'writes_failed': counter['failed'],
               'achieved_writes_per_s': round(counter['ok'] / write_s, 1),
               'dispatcher_idle_cpu_cores': round(idle_cpu, 3),
               'dispatcher_cpu_cores_during_writes': d.get('cpu_cores'),
               'dispatcher_cpu_seconds': d.get('cpu_seconds'),
               'dispatcher_cpu_ms_per_write': round(1000.0 * d.get('cpu_seconds', 0) /
                                                    max(1, counter['ok']), 3),
               'republished': republished, 'window': w, 'failures': []}
        if republished:
            res['failures'].append(f'the dispatcher published {republished} events for '
                                   'status-only writes')
        if counter['failed']:
            res['failures'].append(f"{counter['failed']} status writes failed")
        return res
