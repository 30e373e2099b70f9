#!/usr/bin/env python3
"""Fleet benchmark: the dispatcher and the status sink at 3,000 clusters x 100 ApplicationSets.

Starts the whole system as local processes (tools/stack/mmi_stack: hub kube-apiserver + etcd,
PostgreSQL, the broker, both services configured from the Helm chart, tools/fleet-sim for the
managed clusters), seeds the hub with the Applications the ApplicationSet controller would have
generated, runs the scenarios of issue 8 (and the CPU scenario of issue 5), prints a report and
writes it as JSON. Python 3 standard library only. See bench/fleet/README.md.

    bench/fleet/fleet_bench.py --scale small --json /tmp/bench-small.json
    bench/fleet/fleet_bench.py --scale full --json bench/results/fleet-300k.json
"""

import copy
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO_ROOT, 'tools', 'stack'))

from fleetbench.cli import parse_args  # noqa: E402
from fleetbench.cold_start import ColdStartMixin  # noqa: E402
from fleetbench.common import APPSET_PREFIX, SCENARIO_NAMES, iso_now, log, mib  # noqa: E402
from fleetbench.goals import goals  # noqa: E402
from fleetbench.manifests import ManifestsMixin  # noqa: E402
from fleetbench.manifests_goals import manifest_goals  # noqa: E402
from fleetbench.observe import ObserveMixin  # noqa: E402
from fleetbench.maestro import compare  # noqa: E402
from fleetbench.report import (  # noqa: E402
    git_commit, machine_info, print_comparison, print_report, write_json)
from fleetbench.scenarios import ScenariosMixin  # noqa: E402
from fleetbench.seeding import SeedingMixin  # noqa: E402
from fleetbench.upstream import UpstreamMixin  # noqa: E402

# What bench/fleet/memory/drive.py and other drivers import from here.
__all__ = ['FleetBench', 'iso_now', 'main', 'parse_args']


class FleetBench(ObserveMixin, SeedingMixin, ColdStartMixin, ScenariosMixin, UpstreamMixin,
                 ManifestsMixin):
    """One run: the fleet's names and size, the hub client, the report being built. Each mixin
    (bench/fleet/fleetbench/) holds one part: probes, setup, scenario (a), scenarios (b)-(e), the
    upstream comparison, scenario (f)."""

    def __init__(self, args, stack):
        self.args = args
        self.stack = stack
        self.clusters = stack.cluster_names()
        self.appsets = [f'{APPSET_PREFIX}{i:03d}' for i in range(args.appsets)]
        self.n_apps = len(self.clusters) * len(self.appsets)
        self.hub = None
        self.report = {'scenarios': {}}
        self.changes_per_minute = max(1, round(self.n_apps * args.change_percent / 100.0))
        # Scenario (f): the Applications are in manifest delivery (fleetbench/manifests.py).
        self.manifest_mode = args.scenarios == 'f'

    def checkpoint(self):
        """The report so far, at --json, marked in progress: a full-scale run takes hours, and
        one cut short (a session limit, a killed machine) keeps what it had measured."""
        write_json(self.args.json, dict(self.report, ok=False, in_progress=True))

    def keep_partial(self, label, res):
        """A scenario's figures so far (its phases that ended), in the report and at --json:
        a run stopped inside a long scenario keeps them; the scenario's end replaces them."""
        self.report['scenarios'][label] = dict(res, in_progress=True)
        self.checkpoint()

    def fleet_args(self):
        return ['--refresh-min', str(self.args.refresh_min), '--refresh-max',
                str(self.args.refresh_max), '--changes-per-minute', str(self.changes_per_minute)]

    def run(self, scenarios):
        a = self.args
        self.report['meta'] = {
            'started': iso_now(), 'scale': a.scale, 'clusters': len(self.clusters),
            'appsets': len(self.appsets), 'applications': self.n_apps, 'transport': a.transport,
            'maestro_replicas': a.maestro_replicas if a.transport == 'grpc' else None,
            'build_dir': a.build_dir, 'scenarios': scenarios,
            'steady_state_seconds': a.steady_seconds, 'ci_mode': a.ci,
            'phase_timeout_s': a.timeout, 'restart_settle_max_s': a.settle_max,
            'machine': machine_info(), 'note': a.note, 'nice': os.nice(0),
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
        # (a) always runs: every other scenario needs a dispatched, acknowledged fleet; (f) runs
        # alone, its own cold start included.
        keys = ['f'] if self.manifest_mode else ['a'] + [s for s in scenarios if s != 'a']
        for key in keys:
            label = f'{key}_{SCENARIO_NAMES[key]}'
            t = time.monotonic()
            try:
                res = getattr(self, f'scenario_{key}')()
            except Exception as e:  # noqa: BLE001 - a scenario failure is reported, not fatal
                res = {'failures': [f'{type(e).__name__}: {e}'],
                       'traceback': traceback.format_exc()}
            if getattr(self, 'maestro_probe', None):
                self.maestro_probe.close()
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
            if self.manifest_mode:
                raise RuntimeError('scenario (f): the upstream baseline is for Application '
                                   'delivery')
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
        for name in ('dispatcher', 'status-sink'):
            if name in self.report['final_processes']:
                self.report['final_processes'][name]['peak_rss_mib'] = self.peak_rss_mib(name)
        try:
            self.report['goals'] = (manifest_goals if self.manifest_mode else goals)(self.report)
        except Exception as e:  # noqa: BLE001 - a report problem, not the run's
            self.report['goals_error'] = f'{type(e).__name__}: {e}'
        self.report['meta']['finished'] = iso_now()
        self.report['meta']['load_average_at_end'] = list(os.getloadavg())
        self.report['ok'] = all(s.get('ok') for s in self.report['scenarios'].values())
        return self.report


def run_once(args):
    """One stack, one bench run: the report (also written to args.json)."""
    from mmi_stack import Stack, StackConfig, prepare_work_dir  # noqa: E402 - tools/stack on sys.path
    # A fresh work dir: a previous run's PostgreSQL data would make (a) measure nothing.
    prepare_work_dir(args.work_dir)
    stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir,
                              transport=args.transport, clusters=args.clusters,
                              maestro_replicas=args.maestro_replicas,
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
        if isinstance(e, KeyboardInterrupt):
            report['interrupted'] = True
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
    return report


def mqtt_args(args):
    """--compare-mqtt: the same run over MQTT, in its own work dir, written beside the report."""
    m = copy.copy(args)
    m.transport, m.compare_mqtt, m.set = 'mqtt', False, list(args.set)
    m.maestro_replicas = 1
    m.work_dir = args.work_dir + '-mqtt'
    m.json = os.path.join(m.work_dir, 'report.json')
    return m


def attach_mqtt_comparison(report, mqtt_report):
    """The MQTT run's (a) in the gRPC report, with gRPC's rates over MQTT's, and the goals again
    (their gRPC rows read it)."""
    mqtt_a = mqtt_report.get('scenarios', {}).get('a_cold_start', {})
    grpc_a = report.get('scenarios', {}).get('a_cold_start', {})
    report['compare_mqtt'] = {
        'note': 'scenario (a) over MQTT on a stack of the same size, run just before the gRPC '
                'one in the same invocation (same binaries, same machine)',
        'mqtt_meta': {k: mqtt_report.get('meta', {}).get(k)
                      for k in ('started', 'finished', 'total_s', 'logs', 'commit')},
        'mqtt_ok': mqtt_report.get('ok'),
        'mqtt_cold_start': mqtt_a,
        'rates': compare(grpc_a, mqtt_a) if grpc_a and mqtt_a else None}
    report['ok'] = bool(report.get('ok')) and bool(mqtt_report.get('ok'))
    try:
        report['goals'] = goals(report)
    except Exception as e:  # noqa: BLE001 - a report problem, not the run's
        report['goals_error'] = f'{type(e).__name__}: {e}'


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    # SIGTERM (a ctest timeout, Ctrl-C from a wrapper) ends the run through `finally`: the stack
    # stops and the report says what was reached.
    def on_term(signum, _frame):
        raise KeyboardInterrupt(f'signal {signum}')
    signal.signal(signal.SIGTERM, on_term)
    mqtt_report = None
    if args.compare_mqtt:
        log(f'--compare-mqtt: scenario (a) over MQTT first, {args.clusters} x {args.appsets}')
        mqtt_report = run_once(mqtt_args(args))
        if mqtt_report.get('interrupted'):
            return 1
    report = run_once(args)
    if mqtt_report is not None:
        attach_mqtt_comparison(report, mqtt_report)
        write_json(args.json, report)
        print_comparison(report)
    return 0 if report.get('ok') else 1


if __name__ == '__main__':
    sys.exit(main())
