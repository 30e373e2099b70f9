#!/usr/bin/env python3
"""The dispatcher's memory at a fleet size, without the rest of the fleet bench (issue #21 item 1).

Runs the fleet bench's own setup (hub, etcd seeded with clusters x ApplicationSets Applications,
PostgreSQL, the broker), then only the dispatcher, through the three moments that set its peak:

  cold    started on the full hub, until every Application is recorded as published;
  relist  etcd compacted and kube-apiserver restarted: the watch resumes from a compacted version,
          gets 410 and lists again next to its cache;
  restart SIGTERM and a new process: warm load from PostgreSQL, then the list.

Each phase reports the process's peak RSS in that phase (VmHWM, reset at the phase's start
through /proc/PID/clear_refs), its RSS when settled and the process's CPU seconds so far. No fleet-sim and no status sink: nothing acknowledges or writes
statuses, so the hub and the two cores serve the dispatcher alone (the full bench measures it
with everything else running). Took ~12 min at 300,000 here (setup ~4 min). A phase that does
not complete (no relist seen, a settle that stopped at --settle-max) fails the run.

    bench/fleet/memory/dispatcher_rss.py --scale full --clusters 3000 --appsets 100 --ci \
        --build-dir build/release --work-dir /tmp/rss300k --json /tmp/rss300k/report.json

`--phases cold` stops after the cold start (a heaptrack run needs no more). With `--scenarios f`
the Applications are in manifest delivery (scenario (f)'s setup: the hub's repo-server and the
git server, `--resolve-interval` seconds between resolves): the dispatcher renders, then
publishes bundles; nothing acknowledges them.
"""

import argparse

import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, '..', '..', '..', 'tools', 'stack'))

import fleet_bench as fb  # noqa: E402
from fleetbench import procstat, prom  # noqa: E402
from fleetbench.common import log, mib  # noqa: E402
from fleetbench.report import git_commit, machine_info, write_json  # noqa: E402
from mmi_stack import Stack, StackConfig, prepare_work_dir  # noqa: E402

APPS = {'resource': 'applications.argoproj.io'}


class Phase:
    """One phase of the dispatcher's life: its RSS sampled while the driver waits, its peak
    (VmHWM, reset at the start), a timeline every 10 s; result() reports them."""

    def __init__(self, bench, name):
        self.bench, self.name, self.t0 = bench, name, time.monotonic()
        self.peak = 0
        self.timeline = []
        if bench.stack.running('dispatcher'):
            # VmHWM from here on (Linux: "5" resets the peak RSS to the current RSS).
            with open(f"/proc/{bench.stack.pid('dispatcher')}/clear_refs", 'w') as f:
                f.write('5')

    def stats(self):
        s = procstat.one(self.bench.stack.pid('dispatcher'))
        if s is None:
            raise RuntimeError(f'the dispatcher exited during the {self.name} phase')
        return s

    def sample(self):
        s = self.stats()
        self.peak = max(self.peak, s['rss_bytes'])
        el = time.monotonic() - self.t0
        if not self.timeline or el - self.timeline[-1][0] >= 10:
            m = self.bench.metrics('dispatcher')
            self.timeline.append((round(el), mib(s['rss_bytes']),
                                  int(prom.total(m, 'mmi_dispatcher_decisions_total')),
                                  int(prom.total(m, 'mmi_dispatch_queue_depth')),
                                  int(prom.total(m, 'mmi_dispatcher_outbox_pending'))))
        return s

    def result(self, **extra):
        s = self.stats()
        hwm = procstat.peak_rss_bytes(self.bench.stack.pid('dispatcher'))
        r = {'seconds': round(time.monotonic() - self.t0, 1), 'rss_mib_end': mib(s['rss_bytes']),
             'peak_rss_mib_sampled': mib(self.peak), 'vmhwm_mib': None if hwm is None else mib(hwm),
             'cpu_seconds_process': round(s['cpu_seconds'], 1),
             'timeline': [dict(zip(('s', 'rss_mib', 'decisions', 'queue', 'outbox'), t))
                          for t in self.timeline]}
        r.update(extra)
        log(f"  {self.name}: {json.dumps({k: v for k, v in r.items() if k != 'timeline'})}")
        return r


def wait_published(bench, ph, n, timeout):
    while time.monotonic() - ph.t0 < timeout:
        time.sleep(1)
        ph.sample()  # raises once the dispatcher is gone
        published, _ = bench.pg_progress()
        if published >= n:
            return round(time.monotonic() - ph.t0, 1)
    raise RuntimeError(f'not all {n} published within {timeout} s')


def settle(bench, args, phase):
    """bench.settle, failing the run when it only stopped at --settle-max."""
    s = bench.settle('dispatcher', args.settle_max)
    if s >= args.settle_max:
        raise RuntimeError(f'{phase}: the dispatcher did not settle within {args.settle_max} s')
    return s


def hold(ph, seconds):
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        time.sleep(1)
        ph.sample()


def main():
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument('--phases', default='cold,relist,restart',
                     help='comma-separated, in this order: cold[,relist[,restart]]')
    own, rest = pre.parse_known_args(sys.argv[1:])
    phases = own.phases.split(',')
    if phases != ['cold', 'relist', 'restart'][:len(phases)]:
        pre.error(f'--phases {own.phases}: a prefix of cold,relist,restart')
    args = fb.parse_args(rest)
    prepare_work_dir(args.work_dir)
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir,
                              transport=args.transport, clusters=args.clusters,
                              log_level=args.log_level, helm_set=list(args.set),
                              ready_timeout=float(min(max(args.timeout, 600), 3600))))
    bench = fb.FleetBench(args, stack)
    n = bench.n_apps
    report = {'meta': {'started': fb.iso_now(), 'commit': git_commit(), 'machine': machine_info(),
                       'applications': n, 'set': list(args.set), 'scenarios': args.scenarios,
                       'resolve_interval_s': args.resolve_interval, 'phases': phases},
              'phases': {}, 'ok': False}

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f'signal {signum}')
    signal.signal(signal.SIGTERM, on_term)
    try:
        bench.setup()
        report['setup'] = bench.report.get('setup')

        log(f'cold start of the dispatcher on {n} Applications')
        ph = Phase(bench, 'cold')
        stack.start_dispatcher()
        ready = round(time.monotonic() - ph.t0, 1)
        published = wait_published(bench, ph, n, args.timeout)
        settled = settle(bench, args, 'cold')
        hold(ph, 30)
        report['phases']['cold'] = ph.result(ready_s=ready, all_published_s=published,
                                             settled_s=settled)
        if 'relist' not in phases:
            report['ok'] = True
            return 0

        log('relist: etcd compacted, kube-apiserver restarted')
        ph = Phase(bench, 'relist')
        rel0 = prom.total(bench.metrics('dispatcher'), 'mmi_kube_relists_total', APPS)
        stack.compact_etcd()
        stack.restart_kube_apiserver()
        relisted = None
        while time.monotonic() - ph.t0 < args.timeout:
            time.sleep(1)
            ph.sample()
            if prom.total(bench.metrics('dispatcher'), 'mmi_kube_relists_total', APPS) > rel0:
                relisted = round(time.monotonic() - ph.t0, 1)
                break
        if relisted is None:
            raise RuntimeError(f'no relist of Applications within {args.timeout} s')
        settled = settle(bench, args, 'relist')
        hold(ph, 30)
        m = bench.metrics('dispatcher')
        report['phases']['relist'] = ph.result(
            relisted_s=relisted, settled_s=settled,
            dispatches_since_start=int(prom.total(m, 'mmi_dispatcher_dispatches_total')))
        if 'restart' not in phases:
            report['ok'] = True
            return 0

        log('restart: SIGTERM, a new dispatcher on the same state')
        rc = stack.stop_process('dispatcher', signal.SIGTERM, timeout=args.stop_timeout)
        ph = Phase(bench, 'restart')
        stack.start_dispatcher()
        ready = round(time.monotonic() - ph.t0, 1)
        settled = settle(bench, args, 'restart')
        hold(ph, 30)
        m = bench.metrics('dispatcher')
        report['phases']['restart'] = ph.result(
            stop_exit_code=rc, ready_s=ready, settled_s=settled,
            republished=int(prom.total(m, 'mmi_dispatcher_dispatches_total')))
        report['ok'] = rc == 0
    except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - recorded in the report
        report['error'] = f'{type(e).__name__}: {e}'
        log(f'FAILED: {report["error"]}')
    finally:
        stack.stop()
        report['meta']['finished'] = fb.iso_now()
        write_json(args.json, report)
        log(f'report: {args.json}')
    return 0 if report['ok'] else 1


if __name__ == '__main__':
    sys.exit(main())
