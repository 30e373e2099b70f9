#!/usr/bin/env python3
"""Fleet benchmark: the dispatcher and the status sink at 3,000 clusters x 100 ApplicationSets.

Starts the whole system as local processes (tools/stack/mmi_stack.py: hub kube-apiserver + etcd,
PostgreSQL, the broker, both services configured from the Helm chart, tools/fleet-sim for the
managed clusters), seeds the hub with the Applications the ApplicationSet controller would have
generated, runs the scenarios of issue 8 (and the CPU scenario of issue 5), prints a report and
writes it as JSON. Python 3 standard library only. See bench/fleet/README.md.

    bench/fleet/fleet_bench.py --scale small --json /tmp/bench-small.json
    bench/fleet/fleet_bench.py --scale full --json bench/results/fleet-300k.json
"""

import argparse
import base64
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO_ROOT, 'tools', 'stack'))

from fleetbench import baseline, procstat, prom  # noqa: E402
from fleetbench.hub import APPS, EtcdSeeder, HubClient, parallel, stored_application  # noqa: E402

NS = 'openshift-gitops'  # the ApplicationSets' and Applications' namespace (examples/)
APPSET_PREFIX = 'appset-'
SCENARIOS = ('a', 'b', 'c', 'd', 'e')
SCENARIO_NAMES = {'a': 'cold_start', 'b': 'steady_state', 'c': 'restart_no_change',
                  'd': 'appset_change', 'e': 'dispatcher_cpu_under_status_writes'}
SERVICES = ('dispatcher', 'status-sink', 'fleet-sim')
PEERS = ('kube-apiserver', 'etcd', 'postgres', 'broker')


def log(msg):
    print(f'[{time.strftime("%H:%M:%S")}] {msg}', flush=True)


def iso_now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def mib(b):
    return round(b / 1048576.0, 1)


class ScenarioFailure(Exception):
    pass


class FleetBench:
    def __init__(self, args, stack):
        self.args = args
        self.stack = stack
        self.clusters = stack.cluster_names()
        self.appsets = [f'{APPSET_PREFIX}{i:03d}' for i in range(args.appsets)]
        self.n_apps = len(self.clusters) * len(self.appsets)
        self.hub = None
        self.report = {'scenarios': {}}
        self.changes_per_minute = max(1, round(self.n_apps * args.change_percent / 100.0))

    def checkpoint(self):
        """The report so far, at --json, marked in progress: a full-scale run takes hours, and
        one cut short (a session limit, a killed machine) keeps what it had measured."""
        write_json(self.args.json, dict(self.report, ok=False, in_progress=True))

    # ---- processes, metrics, snapshots --------------------------------------------------------

    def peer_pid(self, name):
        if name == 'broker':
            key = 'MOSQUITTO_PID' if self.args.transport == 'mqtt' else 'KAFKA_PID'
            return int(self.stack.broker_env[key]) if key in self.stack.broker_env else None
        return self.stack.pid(name)

    def proc_stats(self):
        out = {}
        for name in SERVICES:
            if self.stack.running(name):
                try:
                    out[name] = self.stack.process_stats(name)
                except Exception:  # noqa: BLE001 - the process just exited
                    pass
        for name in PEERS:
            try:
                pid = self.peer_pid(name)
            except Exception:  # noqa: BLE001
                pid = None
            # PostgreSQL: the postmaster and its backends (the services' pooled connections).
            s = procstat.stats(pid, with_children=(name == 'postgres'))
            if s is not None:
                out[name] = s
        self.note_swap()
        return out

    def note_swap(self):
        """The most swap in use at any snapshot (meta.swap_used_max_mib): 0 means every figure
        was taken with everything in RAM."""
        used = procstat.swap_used_bytes()
        if used is not None:
            meta = self.report.setdefault('meta', {})
            meta['swap_used_max_mib'] = max(meta.get('swap_used_max_mib', 0), mib(used))

    def metrics(self, name):
        try:
            return self.stack.metrics(name)
        except Exception as e:  # noqa: BLE001 - reported as missing
            log(f'warning: /metrics of {name}: {e}')
            return {}

    def snapshot(self, names=('dispatcher', 'status-sink', 'fleet-sim', 'kube-apiserver')):
        snap = {'t': time.monotonic(), 'wall': iso_now(), 'procs': self.proc_stats(),
                'own': dict(self.hub.requests) if self.hub else {},
                'own_bytes': dict(self.hub.bytes) if self.hub else {}, 'metrics': {}}
        for name in names:
            if name == 'kube-apiserver' or self.stack.running(name):
                snap['metrics'][name] = self.metrics(name)
        return snap

    def window(self, before, after, restarted=None):
        """Everything a scenario reports about the interval between two snapshots.

        restarted: {process name: snapshot taken just before it was stopped}; its counters and
        CPU restarted at zero, so the window's increase is (at stop - before) + after.
        """
        restarted = restarted or {}
        secs = max(1e-9, after['t'] - before['t'])
        out = {'seconds': round(secs, 1)}

        def m(snap, name):
            return snap['metrics'].get(name, {})

        def cdelta(proc, metric, where=None):
            if proc in restarted:
                return (prom.counter_delta(m(before, proc), m(restarted[proc], proc), metric, where)
                        + prom.total(m(after, proc), metric, where))
            return prom.counter_delta(m(before, proc), m(after, proc), metric, where)

        def ldelta(proc, metric, keys, where=None):
            d = prom.delta_by_label(m(before, proc), m(after, proc), metric, keys, where)
            if proc in restarted:
                d = prom.delta_by_label(m(before, proc), m(restarted[proc], proc), metric, keys,
                                        where)
                for k, v in prom.by_label(m(after, proc), metric, keys, where).items():
                    d[k] = d.get(k, 0.0) + v
            return {'/'.join(k): int(v) for k, v in sorted(d.items()) if v}

        def hist(proc, metric, where=None):
            if proc in restarted:
                # Histogram of the new process only (the old one's observations are lost in the
                # merge: bucket bounds are equal, so add them).
                a = dict(prom.bucket_delta(m(before, proc), m(restarted[proc], proc), metric,
                                           where))
                b = prom.buckets(m(after, proc), metric, where)
                merged = [(le, c + a.get(le, 0.0)) for le, c in b] if b else sorted(a.items())
                return prom.summary(merged)
            return prom.summary(prom.bucket_delta(m(before, proc), m(after, proc), metric, where))

        # Hub API requests by verb and resource (kube-apiserver's own counters), minus the bench's.
        api = prom.delta_by_label(m(before, 'kube-apiserver'), m(after, 'kube-apiserver'),
                                  'apiserver_request_total', ('verb', 'resource'))
        own = {}
        for k, v in after['own'].items():
            d = v - before['own'].get(k, 0)
            if d:
                own[k] = d
        by_verb, services_by_verb = {}, {}
        for (verb, resource), v in sorted(api.items()):
            key = f'{verb} {resource or "-"}'
            by_verb[key] = int(v)
            svc = v - own.get((verb, resource), 0)
            if svc > 0:
                services_by_verb[key] = int(svc)
        # Skip the apiserver's own bookkeeping of scraping itself (GET on /metrics: resource "").
        out['hub_requests'] = {
            'all_by_verb_resource': by_verb,
            'bench_own_by_verb_resource': {f'{k[0]} {k[1] or "-"}': v for k, v in own.items()},
            'excluding_bench_by_verb_resource': services_by_verb,
            'excluding_bench_total': int(sum(services_by_verb.values())),
            'excluding_bench_per_minute': round(sum(services_by_verb.values()) * 60.0 / secs, 1),
        }
        # Hub bytes (kube-apiserver's histograms): request bodies (writes), response bodies of
        # reads (GET/LIST; kube-apiserver does not measure write responses) and watch events sent.
        def sizes(metric, keys):
            d = prom.delta_by_label(m(before, 'kube-apiserver'), m(after, 'kube-apiserver'),
                                    metric, keys)
            return {' '.join(x or '-' for x in k): int(v) for k, v in sorted(d.items()) if v}

        own_bytes = {k: after['own_bytes'].get(k, 0) - before['own_bytes'].get(k, 0)
                     for k in ('request_body', 'response_body')}
        hb = {'request_body_by_verb_resource': sizes('apiserver_request_body_size_bytes_sum',
                                                     ('verb', 'resource')),
              'read_response_by_verb_resource': sizes('apiserver_response_sizes_sum',
                                                      ('verb', 'resource')),
              'watch_events_by_kind': sizes('apiserver_watch_events_sizes_sum',
                                            ('kind', 'resource')),
              'bench_own': own_bytes}
        hb['total_excluding_bench'] = max(0, int(
            sum(hb['request_body_by_verb_resource'].values()) +
            sum(hb['read_response_by_verb_resource'].values()) +
            sum(hb['watch_events_by_kind'].values()) - own_bytes['request_body'] -
            own_bytes['response_body']))
        hb['per_minute_excluding_bench'] = round(hb['total_excluding_bench'] * 60.0 / secs)
        out['hub_bytes'] = hb
        out['hub_watch_events_by_kind'] = ldelta('kube-apiserver', 'apiserver_watch_events_total',
                                                 ('kind', 'resource'))

        # Broker messages.
        out['broker_messages'] = {
            'fleet_sim_specs_received': ldelta('fleet-sim', 'mmi_fleet_sim_specs_received_total',
                                               ('action',)),
            'fleet_sim_statuses_sent': ldelta('fleet-sim', 'mmi_fleet_sim_statuses_sent_total',
                                              ('reason',)),
            'fleet_sim_spec_resyncs_sent': int(cdelta('fleet-sim',
                                                      'mmi_fleet_sim_spec_resyncs_sent_total')),
            'fleet_sim_status_resyncs_answered': int(
                cdelta('fleet-sim', 'mmi_fleet_sim_status_resyncs_answered_total')),
            # Statuses the simulated agents lost: publishes the broker did not acknowledge (not
            # retried by fleet-sim) and received events dropped on a full intake queue.
            'fleet_sim_publish_failures': int(cdelta('fleet-sim',
                                                     'mmi_fleet_sim_publish_failures_total')),
            'fleet_sim_intake_dropped': int(cdelta('fleet-sim',
                                                   'mmi_fleet_sim_intake_dropped_total')),
            'dispatcher_published': ldelta('dispatcher', 'mmi_events_published_total',
                                           ('result',)),
            'dispatcher_received': int(cdelta('dispatcher', 'mmi_events_received_total')),
            'status_sink_published': ldelta('status-sink', 'mmi_events_published_total',
                                            ('result',)),
            'status_sink_received': int(cdelta('status-sink', 'mmi_events_received_total')),
        }
        out['dispatcher'] = {
            'dispatches': ldelta('dispatcher', 'mmi_dispatcher_dispatches_total',
                                 ('action', 'result')),
            'decisions': ldelta('dispatcher', 'mmi_dispatcher_decisions_total', ('decision',)),
            'hub_writes': ldelta('dispatcher', 'mmi_dispatcher_hub_writes_total',
                                 ('operation', 'result')),
            'spec_resync_requests': ldelta('dispatcher', 'mmi_dispatcher_spec_resync_requests_total',
                                           ('result',)),
            'publish_latency': hist('dispatcher', 'mmi_dispatcher_publish_latency_seconds'),
        }
        sink_writes = ldelta('status-sink', 'mmi_status_updates_total', ('result',))
        out['status_sink'] = {
            'events_received': int(cdelta('status-sink', 'mmi_status_events_received_total')),
            'events_dropped': ldelta('status-sink', 'mmi_status_events_dropped_total', ('reason',)),
            'events_coalesced': int(cdelta('status-sink', 'mmi_status_events_coalesced_total')),
            'hub_writes': sink_writes,
            'hub_writes_per_second': round(sink_writes.get('ok', 0) / secs, 1),
            'resync_requests': ldelta('status-sink', 'mmi_status_resync_requests_total',
                                      ('result',)),
            'lag': hist('status-sink', 'mmi_status_lag_seconds'),
            # material: a sync/health/... change; volatile: reconciledAt-only, throttled
            'lag_material': hist('status-sink', 'mmi_status_lag_seconds', {'write': 'material'}),
            'lag_volatile': hist('status-sink', 'mmi_status_lag_seconds', {'write': 'volatile'}),
            'write_duration': hist('status-sink', 'mmi_status_write_duration_seconds'),
        }

        # CPU and RSS per process.
        procs = {}
        for name in SERVICES + PEERS:
            a = after['procs'].get(name)
            b = before['procs'].get(name)
            if a is None:
                continue
            cpu = a['cpu_seconds'] - (b['cpu_seconds'] if b else 0.0)
            if name in restarted and name in restarted[name]['procs']:
                stop = restarted[name]['procs'][name]
                cpu = stop['cpu_seconds'] - (b['cpu_seconds'] if b else 0.0) + a['cpu_seconds']
            elif cpu < 0:  # restarted without a stop snapshot, or a backend exited
                cpu = a['cpu_seconds']
            procs[name] = {'cpu_seconds': round(cpu, 2), 'cpu_cores': round(cpu / secs, 3),
                           'rss_mib': mib(a['rss_bytes'])}
        out['processes'] = procs
        return out

    def start_async(self, name):
        """Starts a service on a thread: Stack's start_* returns only once /readyz is 200, and a
        cold start must be measured from the process start whether or not readiness comes."""
        fn = {'dispatcher': self.stack.start_dispatcher,
              'status-sink': self.stack.start_status_sink}[name]
        box = {'t0': time.monotonic(), 'ready_s': None, 'error': None}

        def run():
            try:
                fn()
                box['ready_s'] = round(time.monotonic() - box['t0'], 1)
            except Exception as e:  # noqa: BLE001 - reported by wait_ready
                box['error'] = str(e)[:2000]

        box['thread'] = threading.Thread(target=run, daemon=True)
        box['thread'].start()
        deadline = time.monotonic() + 30
        while not self.stack.running(name) and box['error'] is None and \
                time.monotonic() < deadline:
            time.sleep(0.2)
        return box

    def wait_ready(self, name, box, grace_s):
        """None when the service became ready (within grace_s more), else the failure text."""
        box['thread'].join(grace_s)
        if box['ready_s'] is not None:
            return None
        if box['error']:
            return f'{name} did not start: {box["error"]}'
        readyz = ''
        try:
            import urllib.request
            with urllib.request.urlopen(self.stack.admin_url(name) + '/readyz', timeout=5) as r:
                readyz = r.read().decode()
        except Exception as e:  # noqa: BLE001 - 503 carries the failing checks
            body = getattr(e, 'read', None)
            readyz = body().decode() if body else str(e)
        return (f'{name} /readyz not 200 {round(time.monotonic() - box["t0"])} s after its '
                f'start: {readyz.strip()}')

    def pg_tables(self):
        """Rows (exact) and pg_total_relation_size of every table of the services."""
        out = {}
        rows = self.stack.psql(
            "SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables "
            "ORDER BY relname")
        for line in rows.splitlines():
            if '|' not in line:
                continue
            name, size = line.split('|', 1)
            count = self.stack.psql(f'SELECT count(*) FROM "{name}"').strip()
            out[name] = {'rows': int(count or 0), 'bytes': int(size), 'mib': mib(int(size))}
        return out

    def pg_progress(self):
        line = self.stack.psql(
            'SELECT (SELECT count(*) FROM dispatched_resources WHERE last_published_at IS NOT NULL),'
            ' (SELECT count(*) FROM resource_status)').strip()
        published, acked = line.split('|')
        return int(published), int(acked)

    def fleet_gauge(self, name):
        return prom.total(self.metrics('fleet-sim'), name)

    # ---- setup: hub objects, seeding ----------------------------------------------------------

    def appset_object(self, name, index, example):
        obj = json.loads(json.dumps(example))
        obj['metadata'] = {'name': name, 'namespace': NS}
        tmpl = obj['spec']['template']
        tmpl['metadata']['name'] = '{{name}}-' + name
        tmpl['spec']['source']['path'] = f"{tmpl['spec']['source'].get('path', 'app')}-{index:03d}"
        return obj

    def setup(self):
        st = self.stack
        t0 = time.monotonic()
        setup = {}
        log(f'starting peers ({self.args.transport}) under {self.args.work_dir}')
        st.start_peers()
        self.hub = HubClient.from_env(st.hub_env)
        setup['broker_tuning'] = self.broker_limits()
        setup['peers_s'] = round(time.monotonic() - t0, 1)
        t = time.monotonic()
        log(f'creating {len(self.clusters)} ManagedClusters and the examples')
        st.create_managed_clusters()
        st.apply_examples()
        setup['clusters_and_examples_s'] = round(time.monotonic() - t, 1)

        # 100 ApplicationSets: copies of examples/applicationset.yaml, each with its own name and
        # source path, created through the API (kubectl converts the YAML; no YAML in stdlib).
        t = time.monotonic()
        example = json.loads(st.kubectl('create', '--dry-run=client', '-o', 'json', '-f',
                                        os.path.join(REPO_ROOT, 'examples', 'applicationset.yaml')))
        items = [self.appset_object(n, i, example) for i, n in enumerate(self.appsets)]
        st.kubectl('apply', '--server-side', '--field-manager=fleet-bench', '-f', '-',
                   input=json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': items}))
        setup['applicationsets'] = len(items)
        setup['applicationsets_s'] = round(time.monotonic() - t, 1)

        # Seed every generated Application straight into etcd in kube-apiserver's storage format.
        t = time.monotonic()
        log(f'seeding {self.n_apps} Applications into etcd ({self.args.seed_threads} threads)')
        seeder = EtcdSeeder(st.hub_env['ETCD_ENDPOINT'])
        prefix = '/registry/argoproj.io/applications'
        sample = st.generated_application(self.appsets[0], self.clusters[0])
        self.sample_app = sample
        created_ts = iso_now()

        def gen():
            for a in self.appsets:
                for c in self.clusters:
                    yield a, c

        last = (self.appsets[-1], self.clusters[-1])
        progress = {'n': 0}
        lock = threading.Lock()

        def put(item):
            app = st.generated_application(*item)
            app['metadata']['creationTimestamp'] = created_ts
            obj = stored_application(app, str(uuid.uuid4()))
            meta = obj['metadata']
            seeder.put(f"{prefix}/{meta['namespace']}/{meta['name']}",
                       json.dumps(obj, separators=(',', ':')).encode())
            with lock:
                progress['n'] += 1
                if progress['n'] % 20000 == 0:
                    log(f'  seeded {progress["n"]}')

        items_iter = (it for it in gen() if it != last)
        done, failures, errors = parallel(items_iter, put, self.args.seed_threads)
        try:
            put(last)  # alone, after the others: the highest etcd revision
            done += 1
        except Exception as e:  # noqa: BLE001
            failures += 1
            errors.append(str(e))
        seed_s = time.monotonic() - t
        setup['seed'] = {'applications': done, 'failures': failures, 'errors': errors,
                         'seconds': round(seed_s, 1), 'per_second': round(done / seed_s, 1),
                         'stored_json_bytes_one': len(json.dumps(stored_application(
                             sample, str(uuid.uuid4())), separators=(',', ':')))}
        if failures:
            raise ScenarioFailure(f'seeding: {failures} failures, first: {errors[:2]}')
        # Wait until the API server's watch cache has the last one (resourceVersion=0 lists are
        # served from the cache), as bench/kube does.
        t = time.monotonic()
        last_name = st.generated_application(*last)['metadata']['name']
        probe = (f'{APPS}/namespaces/{NS}/applications?resourceVersion=0&'
                 f'fieldSelector=metadata.name%3D{last_name}')
        while True:
            status, body = self.hub.request('GET', probe, resource='applications', verb='LIST')
            if status == 200 and json.loads(body).get('items'):
                break
            if time.monotonic() - t > self.args.timeout:
                raise ScenarioFailure("the API server's watch cache did not catch up with etcd")
            time.sleep(1)
        setup['watch_cache_catch_up_s'] = round(time.monotonic() - t, 1)
        setup['etcd_revision_after_seed'] = seeder.max_revision
        setup['total_s'] = round(time.monotonic() - t0, 1)
        log(f"seeded {done} in {seed_s:.0f} s; watch cache caught up in "
            f"{setup['watch_cache_catch_up_s']} s")
        self.report['setup'] = setup

    def broker_limits(self):
        """The broker's queue settings as started (tests/peers/bin/start-mosquitto sets them for a
        fleet this size: fleet-sim speaks for every agent over one client), for the report."""
        if self.args.transport != 'mqtt':
            return 'n/a'
        conf = os.path.join(self.stack.peers_dir, 'broker', 'mosquitto.conf')
        with open(conf) as f:
            lines = [l.strip() for l in f if l.startswith(('max_queued', 'max_inflight'))]
        return 'mosquitto ' + (', '.join(lines) or 'defaults')

    def mosquitto_dropped(self):
        """mosquitto's own count of dropped publishes ($SYS/broker/publish/messages/dropped,
        published every 10 s and only once non-zero); None when not available."""
        if self.args.transport != 'mqtt':
            return None
        import shutil
        import subprocess
        sub = shutil.which('mosquitto_sub')
        if not sub:
            return None
        try:
            out = subprocess.run(
                [sub, '-h', '127.0.0.1', '-p', self.stack.broker_env['MQTT_PORT'], '-C', '1',
                 '-W', '12', '-t', '$SYS/broker/publish/messages/dropped'],
                capture_output=True, text=True, timeout=20, check=False).stdout.strip()
            return int(out) if out else 0
        except (OSError, ValueError, subprocess.SubprocessError, KeyError):
            return None

    def fleet_args(self):
        return ['--refresh-min', str(self.args.refresh_min), '--refresh-max',
                str(self.args.refresh_max), '--changes-per-minute', str(self.changes_per_minute)]

    # ---- (a) cold start -----------------------------------------------------------------------

    def scenario_a(self):
        st, n = self.stack, self.n_apps
        log('(a) cold start: fleet-sim and status-sink, then the dispatcher')
        st.start_fleet_sim(self.fleet_args())
        st.start_status_sink()
        before = self.snapshot()
        t0 = time.monotonic()
        started = self.start_async('dispatcher')
        res = {'applications': n, 'failures': []}
        t_pub = t_spoke = t_ack = None
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
                # Spec events the agents never received: nothing re-sends them (the dispatcher
                # waits for no acknowledgement; agents ask for a spec resync only on
                # (re)connect). Record it as a failure, then let fleet-sim reconnect so the rest
                # of the bench runs on a complete fleet.
                recovered = True
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
                continue
            for name, s in self.proc_stats().items():
                peak[name] = max(peak.get(name, 0), s['rss_bytes'])
            if t_pub is None and published >= n:
                t_pub = el
            if t_spoke is None and spoke >= n:
                t_spoke = el
            if t_ack is None and acked >= n:
                t_ack = el
            if el - last_log >= 30:
                last_log = el
                log(f'  {el:.0f} s: published {published}, on spokes {spoke}, '
                    f'acknowledged on the hub {acked} / {n}')
            if t_pub is not None and t_spoke is not None and t_ack is not None:
                break
            if started['error'] is not None:
                break  # the dispatcher exited or never started: wait_ready reports why
            dead = [x for x in ('status-sink', 'fleet-sim') if not st.running(x)]
            if started['ready_s'] is not None and not st.running('dispatcher'):
                dead.append('dispatcher')
            if dead:
                res['failures'].append(f'{", ".join(dead)} exited during the cold start '
                                       f'(logs: {self.args.work_dir}/logs)')
                break
            if el > self.args.timeout:
                res['failures'].append(f'timeout after {self.args.timeout} s: published '
                                       f'{published}, on spokes {spoke}, acknowledged {acked} '
                                       f'of {n}')
                break
        not_ready = self.wait_ready('dispatcher', started, 60)
        res['dispatcher_ready_s'] = started['ready_s']
        if not_ready:
            res['failures'].append(not_ready)
        after = self.snapshot()
        res['mosquitto_dropped_publishes'] = self.mosquitto_dropped()
        res.update({'all_published_s': t_pub and round(t_pub, 1),
                    'all_on_spokes_s': t_spoke and round(t_spoke, 1),
                    'all_acknowledged_s': t_ack and round(t_ack, 1)})
        if t_pub:
            res['dispatch_throughput_per_s'] = round(n / t_pub, 1)
        if t_ack:
            res['acknowledged_throughput_per_s'] = round(n / t_ack, 1)
        fs_stop = getattr(self, 'fleet_sim_before_restart', None)
        res['window'] = self.window(before, after, restarted={
            'fleet-sim': {'metrics': {'fleet-sim': fs_stop}, 'procs': {}}} if fs_stop else None)
        res['peak_rss_mib'] = {k: mib(v) for k, v in peak.items()}
        res['postgres'] = self.pg_tables()
        if t_ack is not None:
            res['hub_check'] = self.verify_hub_statuses()
            if res['hub_check'].get('without_status', 0):
                res['failures'].append(
                    f"{res['hub_check']['without_status']} hub Applications without a status")
        return res

    def verify_hub_statuses(self):
        """Every hub Application carries the agent's status (sync and health): a paged LIST of
        all of them up to --verify-list-max Applications, else GETs of a random sample."""
        t = time.monotonic()
        counts = {'checked': 0, 'without_status': 0}

        def check(app):
            s = app.get('status') or {}
            counts['checked'] += 1
            if not (s.get('sync') or {}).get('status') or not (s.get('health') or {}).get('status'):
                counts['without_status'] += 1

        if self.n_apps <= self.args.verify_list_max:
            self.hub.list_all(f'{APPS}/namespaces/{NS}/applications', resource='applications',
                              fn=check)
            counts['method'] = 'LIST of every Application'
        else:
            import random
            rnd = random.Random(7)
            names = [f'{rnd.choice(self.clusters)}-{rnd.choice(self.appsets)}'
                     for _ in range(self.args.verify_sample)]
            lock = threading.Lock()

            def get(name):
                app = self.hub.get_json(f'{APPS}/namespaces/{NS}/applications/{name}',
                                        resource='applications')
                with lock:
                    check(app)

            parallel(names, get, 8)
            counts['method'] = f'GET of {len(names)} random Applications'
        counts['seconds'] = round(time.monotonic() - t, 1)
        return counts

    # ---- (b) steady state ---------------------------------------------------------------------

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
        w = self.window(before, after)
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

    # ---- (c) restart with nothing changed -----------------------------------------------------

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
            log(f'(c) restart of {name} (SIGTERM, start again), nothing changed on the hub')
            before = self.snapshot()
            at_stop = self.snapshot()
            t0 = time.monotonic()
            rc = st.stop_process(name, signal.SIGTERM, timeout=self.args.stop_timeout)
            stop_s = time.monotonic() - t0
            started = self.start_async(name)
            settle_s = self.settle(name, self.args.settle_max)
            not_ready = self.wait_ready(name, started, 60)
            after = self.snapshot()
            w = self.window(before, after, restarted={name: at_stop})
            r = {'exit_code': rc, 'stop_s': round(stop_s, 1),
                 'ready_after_start_s': started['ready_s'],
                 'settled_after_start_s': settle_s, 'window': w}
            if not_ready:
                res['failures'].append(not_ready)
            if rc != 0:
                res['failures'].append(f'{name} exited with {rc} on SIGTERM')
            if name == 'dispatcher':
                republished = sum(w['dispatcher']['dispatches'].values())
                published = sum(w['broker_messages']['dispatcher_published'].values())
                r['republished'] = republished
                r['events_published'] = published
                if republished or published:
                    res['failures'].append(f'dispatcher restart republished {republished} '
                                           f'(published events: {published})')
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

    # ---- (d) one ApplicationSet change --------------------------------------------------------

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
                    'window': self.window(before, after)})
        if t_hub:
            res['throughput_apps_per_s'] = round(n / t_hub, 1)
        return res

    # ---- (e) dispatcher CPU under status writes -----------------------------------------------

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
        w = self.window(before, after)
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

    # ---- baseline -----------------------------------------------------------------------------

    def baseline(self):
        """Measures the byte sizes the upstream cost model needs on the real hub, then computes."""
        log('baseline: one ManifestWork and one Application GET measured on the hub')
        st = self.stack
        app_name = f'{self.clusters[0]}-{self.appsets[-1]}'
        status, body = self.hub.request('GET', f'{APPS}/namespaces/{NS}/applications/{app_name}',
                                        resource='applications')
        if status != 200:
            raise ScenarioFailure(f'GET application {app_name}: HTTP {status}')
        app = json.loads(body)
        seeder_key = f'/registry/argoproj.io/applications/{NS}/{app_name}'
        app_stored = self.etcd_value_size(seeder_key)
        work = baseline.build_manifestwork(app)
        ns = work['metadata']['namespace']
        self.hub.request('POST', '/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace',
                                                        'metadata': {'name': ns}},
                         resource='namespaces')
        wpath = f'/apis/work.open-cluster-management.io/v1/namespaces/{ns}/manifestworks'
        s, b = self.hub.request('POST', wpath, work, resource='manifestworks')
        if s not in (200, 201, 409):
            raise ScenarioFailure(f'create ManifestWork: HTTP {s}: {b[:300]!r}')
        name = work['metadata']['name']
        created = self.hub.get_json(f'{wpath}/{name}', resource='manifestworks')
        s, b = self.hub.merge_patch(f'{wpath}/{name}/status',
                                    {'status': baseline.manifestwork_status(created)},
                                    resource='manifestworks')
        if s != 200:
            raise ScenarioFailure(f'ManifestWork status: HTTP {s}: {b[:300]!r}')
        s, wbody = self.hub.request('GET', f'{wpath}/{name}', resource='manifestworks')
        work_stored = self.etcd_value_size(
            f'/registry/work.open-cluster-management.io/manifestworks/{ns}/{name}')
        sizes = {'app_get_response': len(body), 'app_stored': app_stored,
                 'work_get_response': len(wbody), 'work_stored': work_stored}
        # Keep the measurement object from confusing anything: delete it again.
        self.hub.request('DELETE', f'{wpath}/{name}', resource='manifestworks')
        out = baseline.compute(self.n_apps, sizes, self.args.refresh_min, self.args.refresh_max,
                               self.changes_per_minute)
        out['measured_sizes_bytes'] = sizes
        out['measured_from'] = {'application': f'{NS}/{app_name} (GET response, etcd value)',
                                'manifestwork': f'{ns}/{name} built from it, created with the '
                                                'agent status, GET response and etcd value'}
        return out

    def etcd_value_size(self, key):
        import http.client
        import urllib.parse
        u = urllib.parse.urlparse(self.stack.hub_env['ETCD_ENDPOINT'])
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request('POST', '/v3/kv/range', body=json.dumps(
            {'key': base64.b64encode(key.encode()).decode()}),
            headers={'Content-Type': 'application/json'})
        r = json.loads(c.getresponse().read())
        c.close()
        kvs = r.get('kvs') or []
        return len(base64.b64decode(kvs[0]['value'])) if kvs else 0

    def etcd_db_size(self):
        import http.client
        import urllib.parse
        u = urllib.parse.urlparse(self.stack.hub_env['ETCD_ENDPOINT'])
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request('POST', '/v3/maintenance/status', body='{}',
                  headers={'Content-Type': 'application/json'})
        r = json.loads(c.getresponse().read())
        c.close()
        return {'db_size_bytes': int(r.get('dbSize', 0)),
                'db_size_in_use_bytes': int(r.get('dbSizeInUse', 0))}

    def ours_vs_upstream(self, base):
        """Side by side: hub cost measured for ours vs computed for upstream (steady state)."""
        out = {'applications': self.n_apps}
        steady = self.report['scenarios'].get('b_steady_state')
        up = base['steady_state_per_minute']
        out['upstream_computed'] = {
            'hub_objects': base['hub_objects']['total'],
            'hub_requests_per_minute': round(up['total_requests']),
            'hub_bytes_per_minute': round(up['bytes']['total'])}
        ours = {'hub_objects': self.n_apps}
        if steady:
            w = steady['window']
            secs = w['seconds']
            ours['hub_requests_per_minute'] = w['hub_requests']['excluding_bench_per_minute']
            ours['hub_bytes_per_minute'] = w['hub_bytes']['per_minute_excluding_bench']
            ours['status_writes_per_minute'] = round(
                w['status_sink']['hub_writes'].get('ok', 0) * 60.0 / secs)
            if ours['hub_requests_per_minute']:
                out['request_ratio_upstream_over_ours'] = round(
                    up['total_requests'] / ours['hub_requests_per_minute'], 1)
            if ours['hub_bytes_per_minute']:
                out['bytes_ratio_upstream_over_ours'] = round(
                    up['bytes']['total'] / ours['hub_bytes_per_minute'], 1)
        out['ours_measured'] = ours
        out['note'] = ('ours: measured in scenario (b) from kube-apiserver apiserver_request_total, '
                       'apiserver_request_body_size_bytes, apiserver_response_sizes (reads) and '
                       'apiserver_watch_events_sizes, excluding the bench\'s own requests; '
                       'upstream: computed (see baseline_upstream_computed.assumptions), with '
                       'byte sizes measured on this hub')
        return out

    # ---- run ----------------------------------------------------------------------------------

    def run(self, scenarios):
        a = self.args
        self.report['meta'] = {
            'started': iso_now(), 'scale': a.scale, 'clusters': len(self.clusters),
            'appsets': len(self.appsets), 'applications': self.n_apps, 'transport': a.transport,
            'build_dir': a.build_dir, 'scenarios': scenarios,
            'steady_state_seconds': a.steady_seconds, 'ci_mode': a.ci,
            'phase_timeout_s': a.timeout, 'restart_settle_max_s': a.settle_max,
            'machine': machine_info(),
            'commit': git_commit(),
            # chart values changed from examples/values-<transport>.yaml (--set), and the Go
            # runtime settings the hub's etcd and kube-apiserver inherited (peer tuning)
            'helm_set': list(a.set),
            'peer_env': {k: os.environ[k] for k in ('GOMEMLIMIT', 'GOGC') if k in os.environ},
            'measured_vs_computed': 'every number is measured on this run except the '
                                    "'baseline' section (upstream, computed from its algorithm "
                                    'with measured byte sizes)'}
        if a.steady_seconds < 600:
            self.report['meta']['steady_state_note'] = (
                f'steady state ran {a.steady_seconds} s instead of the 600 s of the full scale')
        self.setup()
        self.checkpoint()
        # (a) always runs: every other scenario needs a dispatched, acknowledged fleet.
        for key in ['a'] + [s for s in scenarios if s != 'a']:
            label = f'{key}_{SCENARIO_NAMES[key]}'
            t = time.monotonic()
            try:
                res = getattr(self, f'scenario_{key}')()
            except Exception as e:  # noqa: BLE001 - a scenario failure is reported, not fatal
                res = {'failures': [f'{type(e).__name__}: {e}'],
                       'traceback': traceback.format_exc()}
            res['elapsed_s'] = round(time.monotonic() - t, 1)
            res['ok'] = not res.get('failures')
            self.report['scenarios'][label] = res
            log(f'{label}: {"ok" if res["ok"] else "FAILED: " + "; ".join(res["failures"])}')
            self.checkpoint()
            if key == 'a' and 'traceback' in res:
                log('cold start broke off: the other scenarios are skipped')
                break
            if key == 'a' and res.get('all_acknowledged_s') is None:
                log('cold start did not complete: the other scenarios run on the partial fleet')
        try:
            self.report['hub_etcd'] = self.etcd_db_size()
            base = self.baseline()
            ours = self.ours_vs_upstream(base)
            # both or neither: print_report reads them together
            self.report['baseline_upstream_computed'] = base
            self.report['ours_vs_upstream'] = ours
        except Exception as e:  # noqa: BLE001
            self.report['baseline_error'] = f'{type(e).__name__}: {e}'
        self.report['final_processes'] = {
            k: {'rss_mib': mib(v['rss_bytes']), 'cpu_seconds': round(v['cpu_seconds'], 1)}
            for k, v in self.proc_stats().items()}
        self.report['meta']['finished'] = iso_now()
        self.report['ok'] = all(s.get('ok') for s in self.report['scenarios'].values())
        return self.report


def write_json(path, obj):
    """Writes obj to path through a temporary file, so a reader never sees half a report."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f'{path}.tmp'
    with open(tmp, 'w') as f:
        json.dump(obj, f, indent=1, sort_keys=False)
    os.replace(tmp, path)


def git_commit():
    """The source the binaries are assumed to come from: HEAD, '+dirty' with local changes."""
    try:
        head = subprocess.run(['git', '-C', REPO_ROOT, 'rev-parse', '--short=12', 'HEAD'],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', REPO_ROOT, 'status', '--porcelain', '-uno'],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ('+dirty' if dirty else '')
    except (OSError, subprocess.CalledProcessError):
        return 'unknown'


def machine_info():
    info = {'cores': os.cpu_count(), 'kernel': platform.release(),
            'python': platform.python_version()}
    try:
        with open('/proc/meminfo') as f:
            meminfo = {k: v.split() for k, v in (line.split(':', 1) for line in f)}
        info['mem_gib'] = round(int(meminfo['MemTotal'][0]) / 1048576.0, 1)
        # swap present during the run (a safety net for a full-scale run's peak, not a resource
        # the figures should rely on): its size, and how much was in use when this was read
        info['swap_gib'] = round(int(meminfo['SwapTotal'][0]) / 1048576.0, 1)
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    info['cpu'] = line.split(':', 1)[1].strip()
                    break
        info['load_average_at_start'] = list(os.getloadavg())
    except OSError:
        pass
    return info


# ---- the printed report ---------------------------------------------------------------------


def fmt_lag(h):
    if not h or not h.get('count'):
        return 'n/a'
    p99 = f"{'>=' if h.get('p99_at_least') else ''}{h['p99_s']}"
    return f"p50 {h['p50_s']} s, p99 {p99} s (n={h['count']})"


def print_report(r):
    m = r['meta']
    print()
    print('=' * 78)
    print(f"fleet bench: {m['clusters']} clusters x {m['appsets']} ApplicationSets = "
          f"{m['applications']} Applications ({m['scale']}, {m['transport']})")
    mi = m['machine']
    print(f"machine: {mi.get('cores')} cores, {mi.get('mem_gib')} GiB, {mi.get('cpu', '?')}, "
          f"load at start {mi.get('load_average_at_start')}")
    if m.get('steady_state_note'):
        print(f"note: {m['steady_state_note']}")
    s = r.get('setup', {})
    if s:
        print(f"setup: seed {s['seed']['applications']} Applications into etcd in "
              f"{s['seed']['seconds']} s ({s['seed']['per_second']}/s); watch cache caught up "
              f"in {s['watch_cache_catch_up_s']} s")
    for label, res in r['scenarios'].items():
        print('-' * 78)
        print(f"({label}) {'OK' if res.get('ok') else 'FAILED'} in {res.get('elapsed_s')} s")
        for f in res.get('failures', []):
            print(f'  FAILURE: {f}')
        for k, v in res.items():
            if k in ('window', 'failures', 'ok', 'elapsed_s', 'postgres', 'traceback',
                     'dispatcher', 'status_sink', 'peak_rss_mib', 'hub_check'):
                continue
            print(f'  {k}: {v}')
        if 'hub_check' in res:
            print(f"  hub check: {res['hub_check']}")
        for sub in ('dispatcher', 'status_sink'):
            if isinstance(res.get(sub), dict) and 'window' in res[sub]:
                rr = res[sub]
                print(f"  restart {sub}: " + ', '.join(
                    f'{k}={v}' for k, v in rr.items() if k != 'window'))
                print_window(rr['window'], indent='    ')
        if 'window' in res:
            print_window(res['window'])
        if 'postgres' in res:
            print('  postgres: ' + ', '.join(
                f"{t} {v['rows']} rows {v['mib']} MiB" for t, v in res['postgres'].items()))
    if 'baseline_upstream_computed' in r:
        b = r['baseline_upstream_computed']
        c = r['ours_vs_upstream']
        print('-' * 78)
        print('baseline: upstream propagation (COMPUTED from its algorithm, byte sizes '
              'MEASURED on this hub)')
        print(f"  sizes: {b['measured_sizes_bytes']}")
        print(f"  hub objects: {b['hub_objects']}; etcd bytes: {b['hub_etcd_bytes']}")
        ss = b['steady_state_per_minute']
        print(f"  steady state per minute: {round(ss['status_poll_gets'])} status GETs, "
              f"{round(ss['application_status_updates'])} Application updates, "
              f"{round(ss['manifestwork_status_updates'])} ManifestWork status updates = "
              f"{round(ss['total_requests'])} requests, {mib(ss['bytes']['total'])} MiB")
        print(f"  ours (MEASURED) vs upstream (COMPUTED): {json.dumps(c)}")
    elif 'baseline_error' in r:
        print(f"baseline: not computed: {r['baseline_error']}")
    if 'hub_etcd' in r:
        print(f"hub etcd (measured): {r['hub_etcd']}")
    print('=' * 78)
    print(f"result: {'OK' if r.get('ok') else 'FAILED'}")


def print_window(w, indent='  '):
    print(f"{indent}window {w['seconds']} s; hub requests (excluding the bench's own) "
          f"{w['hub_requests']['excluding_bench_total']} "
          f"({w['hub_requests']['excluding_bench_per_minute']}/min): "
          f"{w['hub_requests']['excluding_bench_by_verb_resource']}")
    own = w['hub_requests']['bench_own_by_verb_resource']
    if own:
        print(f'{indent}  bench own requests: {own}')
    b = w['broker_messages']
    print(f"{indent}broker: fleet-sim specs received {b['fleet_sim_specs_received']}, statuses "
          f"sent {b['fleet_sim_statuses_sent']}, publish failures "
          f"{b['fleet_sim_publish_failures']}, intake dropped {b['fleet_sim_intake_dropped']}; "
          f"dispatcher published {b['dispatcher_published']}, received "
          f"{b['dispatcher_received']}; sink received {b['status_sink_received']}")
    d, s = w['dispatcher'], w['status_sink']
    print(f"{indent}dispatcher: dispatches {d['dispatches']}, decisions {d['decisions']}, "
          f"publish latency {fmt_lag(d['publish_latency'])}")
    print(f"{indent}status-sink: received {s['events_received']}, dropped {s['events_dropped']}, "
          f"coalesced {s['events_coalesced']}, hub writes {s['hub_writes']} "
          f"({s['hub_writes_per_second']}/s), lag {fmt_lag(s['lag'])} "
          f"(material writes {fmt_lag(s['lag_material'])}, "
          f"volatile-only {fmt_lag(s['lag_volatile'])})")
    hb = w.get('hub_bytes', {})
    if hb:
        print(f"{indent}hub bytes (excluding the bench): {mib(hb['total_excluding_bench'])} MiB "
              f"({mib(hb['per_minute_excluding_bench'])} MiB/min): request bodies "
              f"{hb['request_body_by_verb_resource']}, read responses "
              f"{hb['read_response_by_verb_resource']}, watch events "
              f"{hb['watch_events_by_kind']}")
    print(f'{indent}processes: ' + ', '.join(
        f"{k} {v['cpu_cores']} cores {v['rss_mib']} MiB" for k, v in w['processes'].items()))


# ---- command line ---------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--scale', choices=('full', 'small'), default='small',
                   help='full: 3,000 clusters x 100 ApplicationSets, 10 min steady state; '
                        'small: 300 x 100, 2 min steady state')
    p.add_argument('--clusters', type=int, help='override the number of clusters')
    p.add_argument('--appsets', type=int, help='override the number of ApplicationSets')
    p.add_argument('--scenarios', default='a,b,c,d,e',
                   help='comma-separated subset of a,b,c,d,e (a always runs first)')
    p.add_argument('--ci', action='store_true',
                   help='CI mode: shorter steady state and write phases (sanitizer builds)')
    p.add_argument('--transport', choices=('mqtt', 'kafka'), default='mqtt')
    p.add_argument('--build-dir', default=os.path.join(REPO_ROOT, 'build', 'release'))
    p.add_argument('--work-dir', help='default: /tmp/mmi-fleet-bench-<scale>')
    p.add_argument('--json', help='write the report here (default: <work-dir>/report.json)')
    p.add_argument('--keep', action='store_true', help='leave the stack running at the end')
    p.add_argument('--steady-seconds', type=int, help='steady-state duration (full 600, small 120)')
    p.add_argument('--refresh-min', type=int, default=120)
    p.add_argument('--refresh-max', type=int, default=180)
    p.add_argument('--change-percent', type=float, default=1.0,
                   help='real sync/health changes per minute, percent of the Applications')
    p.add_argument('--status-write-rate', type=int, default=2000, help='(e) target writes/s')
    p.add_argument('--status-write-seconds', type=int, help='(e) duration (full 60, small 30)')
    p.add_argument('--idle-seconds', type=int, default=10, help='(e) idle CPU baseline')
    p.add_argument('--write-threads', type=int, default=32)
    p.add_argument('--seed-threads', type=int, default=16)
    p.add_argument('--timeout', type=int, help='per-phase timeout in s (full 7200, small 1200)')
    p.add_argument('--settle-quiet', type=int, default=10,
                   help='(c) counters unchanged this long = settled')
    p.add_argument('--settle-max', type=int,
                   help='(c) longest wait for a restarted service to settle, in s (full 1800: '
                        'a restarted dispatcher lists 300,000 Applications from a busy hub, '
                        '~300/s on a slow machine when the API server ends its streamed list, '
                        'and may list twice; small 300)')
    p.add_argument('--stall-seconds', type=int, default=90,
                   help='(a) spokes without progress this long after everything was published: '
                        'lost spec events (a failure), recovered by a fleet-sim restart')
    p.add_argument('--stop-timeout', type=int, default=60)
    p.add_argument('--verify-list-max', type=int, default=50000,
                   help='(a) up to this many Applications: LIST them all to check statuses')
    p.add_argument('--verify-sample', type=int, default=3000)
    p.add_argument('--log-level', default='info')
    p.add_argument('--set', action='append', default=[], metavar='KEY=VALUE',
                   help='chart value over examples/values-<transport>.yaml (helm --set; '
                        'repeatable), recorded in the report')
    a = p.parse_args(argv)
    full = a.scale == 'full'
    a.clusters = a.clusters or (3000 if full else 300)
    a.appsets = a.appsets or 100
    if a.settle_max is None:
        a.settle_max = 1800 if full else 300
    if a.steady_seconds is None:
        a.steady_seconds = 600 if full else (60 if a.ci else 120)
    if a.status_write_seconds is None:
        a.status_write_seconds = 60 if full else (15 if a.ci else 30)
    if a.timeout is None:
        a.timeout = 7200 if full else 1200
    if a.ci:
        a.settle_quiet = min(a.settle_quiet, 5)
    a.work_dir = os.path.abspath(a.work_dir or f'/tmp/mmi-fleet-bench-{a.scale}')
    a.json = a.json or os.path.join(a.work_dir, 'report.json')
    bad = [s for s in a.scenarios.split(',') if s not in SCENARIOS]
    if bad:
        p.error(f'unknown scenarios {bad}')
    return a


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    from mmi_stack import Stack, StackConfig, prepare_work_dir  # noqa: E402 - tools/stack on sys.path
    # A fresh work dir: a previous run's PostgreSQL data would make (a) measure nothing.
    prepare_work_dir(args.work_dir)
    # SIGTERM (a ctest timeout, Ctrl-C from a wrapper) ends the run through `finally`: the stack
    # stops and the report says what was reached.
    def on_term(signum, _frame):
        raise KeyboardInterrupt(f'signal {signum}')
    signal.signal(signal.SIGTERM, on_term)
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir,
                              transport=args.transport, clusters=args.clusters,
                              log_level=args.log_level, helm_set=list(args.set),
                              # readiness is awaited (and reported) by the bench itself; Stack
                              # kills a process that is not ready within ready_timeout
                              ready_timeout=float(min(max(args.timeout, 600), 3600))))
    bench = FleetBench(args, stack)
    t0 = time.monotonic()
    report = None
    try:
        report = bench.run([s for s in args.scenarios.split(',') if s])
    except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - the report says what failed
        bench.report.setdefault('meta', {})
        bench.report['error'] = f'{type(e).__name__}: {e}'
        bench.report['traceback'] = traceback.format_exc()
        bench.report['ok'] = False
        report = bench.report
        log(f'bench failed: {e}')
    finally:
        if not args.keep:
            stack.stop()
        else:
            log(f'stack left running; stop it with tests/peers/bin/stop on {args.work_dir}/peers/*')
    report.setdefault('meta', {})['total_s'] = round(time.monotonic() - t0, 1)
    report['meta']['logs'] = os.path.join(args.work_dir, 'logs')
    write_json(args.json, report)
    if 'scenarios' in report and 'meta' in report and 'clusters' in report['meta']:
        print_report(report)
    print(f'report: {args.json} (total {report["meta"]["total_s"]} s)')
    return 0 if report.get('ok') else 1


if __name__ == '__main__':
    sys.exit(main())
