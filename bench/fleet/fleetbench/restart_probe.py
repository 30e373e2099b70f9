"""Scenario (c)'s changes during a dispatcher restart: Applications changed on the hub a while
after the dispatcher was started again (while its Application list may still be read), and the
time from each change to the broker passing its spec event on.

The broker side is a `mosquitto_sub` on every cluster's spec topic (MQTT only): it prints each
message's arrival (`%U`, Unix time in ns) and payload; an Application's event is the first whose
payload names it (its ManifestBundle's resourceIdentifier) and carries the run's new revision."""

import shutil
import subprocess
import threading
import time

from . import procstat
from .common import NS, log
from .hub import APPS, parallel

SPEC_TOPIC = 'sources/+/consumers/+/sourceevents'


class BrokerWatch:
    """Notes when each of `names` first passes the broker with `marker` in its payload."""

    def __init__(self, host_port, names, marker, subscribe=True):
        self.marker = marker
        self.needles = {f'"name":"{n}"': n for n in names}
        self.seen = {}
        self.lock = threading.Lock()
        self.proc = self.thread = None
        if not subscribe:
            return  # lines are handed to note() (tests)
        binary = shutil.which('mosquitto_sub')
        if binary is None:
            raise RuntimeError('mosquitto_sub not found (Debian package mosquitto-clients)')
        host, port = host_port.rsplit(':', 1)
        self.proc = subprocess.Popen(
            [binary, '-h', host, '-p', port, '-V', 'mqttv5', '-q', '1', '-t', SPEC_TOPIC,
             '-F', '%U %p'],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.note(line)

    def note(self, line):
        """One `mosquitto_sub -F '%U %p'` line: its arrival time and payload."""
        if self.marker not in line:
            return
        stamp, _, payload = line.partition(' ')
        try:
            at = float(stamp)
        except ValueError:
            return
        for needle, name in self.needles.items():
            if needle in payload:
                with self.lock:
                    self.seen.setdefault(name, at)

    def arrivals(self):
        with self.lock:
            return dict(self.seen)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.thread.join(5)


def percentile(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


class RestartChanges:
    """Changes `count` Applications `delay_s` after `started_at` (time.monotonic()) and times
    each to the broker. Start it before the dispatcher is stopped (the subscriber must be
    connected first); result() waits for the arrivals."""

    def __init__(self, bench, count, delay_s):
        self.bench = bench
        self.delay_s = delay_s
        # Spread over clusters and ApplicationSets: every n-th Application of the fleet.
        fleet = [f'{c}-{a}' for a in bench.appsets for c in bench.clusters]
        step = max(1, len(fleet) // max(1, count))
        self.names = fleet[::step][:count]
        self.rev = f'restart-{int(time.time())}'
        self.patched = {}
        self.errors = []
        self.watch = BrokerWatch(bench.stack.broker_address(), self.names, self.rev)
        self.thread = None

    def start(self, started_at, ready_box):
        def run():
            time.sleep(max(0.0, started_at + self.delay_s - time.monotonic()))
            self.synced_before = ready_box.get('ready_s') is not None
            log(f'(c) changing {len(self.names)} Applications {self.delay_s} s after the '
                f'dispatcher started (its /readyz {"200" if self.synced_before else "not 200 yet"})')

            def patch(name):
                sent = time.time()  # the change exists on the hub from about now
                status, body = self.bench.hub.merge_patch(
                    f'{APPS}/namespaces/{NS}/applications/{name}',
                    {'spec': {'source': {'targetRevision': self.rev}}}, resource='applications')
                if status != 200:
                    raise RuntimeError(f'PATCH {name}: HTTP {status}: {body[:200]!r}')
                self.patched[name] = sent

            _, failures, errors = parallel(self.names, patch, 16)
            if failures:
                self.errors.append(f'{failures} hub patches failed: {errors[:2]}')

        self.synced_before = None
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def result(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        if self.thread is not None:
            self.thread.join(max(0.0, deadline - time.monotonic()))
        while time.monotonic() < deadline and len(self.watch.arrivals()) < len(self.patched):
            time.sleep(0.5)
        arrivals = self.watch.arrivals()
        latencies = sorted(arrivals[n] - self.patched[n] for n in self.patched if n in arrivals)
        missing = [n for n in self.patched if n not in arrivals]
        res = {'applications': len(self.names), 'patched': len(self.patched),
               'changed_after_start_s': self.delay_s,
               'dispatcher_ready_when_changed': self.synced_before,
               'to_broker_s': {'p50': _round(percentile(latencies, 0.5)),
                               'p99': _round(percentile(latencies, 0.99)),
                               'max': _round(latencies[-1] if latencies else None)},
               'arrived': len(latencies), 'missing': missing[:10], 'goal_s': 10,
               'failures': list(self.errors)}
        if missing:
            res['failures'].append(f'{len(missing)} changed Applications never reached the '
                                   f'broker within {timeout_s} s: {missing[:3]}')
        return res


def _round(v):
    return None if v is None else round(v, 3)


class RelistSampler:
    """The restarted dispatcher's cost until its Application list is complete (/readyz 200): CPU
    seconds then, and its peak RSS (VmHWM) when result() is called."""

    def __init__(self, stack, name, ready_box):
        self.stack, self.name, self.box = stack, name, ready_box
        self.cpu_at_ready = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            if self.box.get('ready_s') is not None:
                try:
                    self.cpu_at_ready = round(self.stack.process_stats(self.name)['cpu_seconds'], 1)
                except Exception:  # noqa: BLE001 - exited: reported as unknown
                    pass
                return
            self.stop.wait(0.5)

    def result(self):
        self.stop.set()
        self.thread.join(5)
        peak = procstat.peak_rss_mib(self.stack.pid(self.name))
        return {'cpu_seconds_until_ready': self.cpu_at_ready, 'peak_rss_mib': peak,
                'note': 'the restarted dispatcher: CPU from its start to /readyz 200 (its '
                        'Application list complete), peak RSS (VmHWM) once settled'}
