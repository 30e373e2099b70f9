"""What the bench reads from the running system: process figures, /metrics snapshots, readiness,
PostgreSQL tables, the broker's and etcd's own figures."""

import base64
import os
import http.client
import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request

from . import procstat, prom
from .common import PEERS, SERVICES, iso_now, log, mib


class ObserveMixin:
    """Part of FleetBench: snapshots and probes (no scenario logic)."""

    def maestro_pids(self):
        """grpc: every Maestro server instance's pid (start-maestro MAESTRO_PIDS), else []."""
        env = getattr(self.stack, 'maestro_env', None) or {}
        return [int(p) for p in env.get('MAESTRO_PIDS', '').split(',') if p]

    def peer_pid(self, name):
        if name == 'broker':
            # grpc: mosquitto between Maestro and the agents
            key = 'KAFKA_PID' if self.args.transport == 'kafka' else 'MOSQUITTO_PID'
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
            if name == 'maestro' and len(self.maestro_pids()) > 1:
                # its instances (--maestro-replicas) as one process
                s = procstat.summed([procstat.stats(p) for p in self.maestro_pids()])
                if s is not None:
                    out[name] = s
                continue
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

    def peak_rss_mib(self, name):
        """The service's high-water RSS (VmHWM) in MiB, or None when it is not running."""
        try:
            return procstat.peak_rss_mib(self.stack.pid(name))
        except Exception:  # noqa: BLE001 - no such process (any more)
            return None

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

    def broker_limits(self):
        """The broker's queue settings as started (tests/peers/bin/start-mosquitto sets them for a
        fleet this size: fleet-sim speaks for every agent over one client), for the report."""
        if self.args.transport == 'kafka':
            return 'n/a'
        conf = os.path.join(self.stack.peers_dir, 'broker', 'mosquitto.conf')
        with open(conf) as f:
            lines = [l.strip() for l in f if l.startswith(('max_queued', 'max_inflight'))]
        return 'mosquitto ' + (', '.join(lines) or 'defaults')

    def mosquitto_dropped(self):
        """mosquitto's own count of dropped publishes ($SYS/broker/publish/messages/dropped,
        published every 10 s and only once non-zero); None when not available."""
        if self.args.transport == 'kafka':
            return None
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

    def etcd_value_size(self, key):
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
        u = urllib.parse.urlparse(self.stack.hub_env['ETCD_ENDPOINT'])
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.request('POST', '/v3/maintenance/status', body='{}',
                  headers={'Content-Type': 'application/json'})
        r = json.loads(c.getresponse().read())
        c.close()
        return {'db_size_bytes': int(r.get('dbSize', 0)),
                'db_size_in_use_bytes': int(r.get('dbSizeInUse', 0))}
