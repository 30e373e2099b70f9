"""The fleet bench's command line (bench/fleet/README.md lists the flags)."""

import argparse
import os

from .common import SCENARIOS

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
DESCRIPTION = 'Fleet benchmark: the dispatcher and the status sink at 3,000 clusters x 100 ApplicationSets.'


def parse_args(argv):
    p = argparse.ArgumentParser(description=DESCRIPTION,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument('--scale', choices=('full', 'small'), default='small',
                   help='full: 3,000 clusters x 100 ApplicationSets, 10 min steady state; '
                        'small: 300 x 100, 2 min steady state')
    p.add_argument('--clusters', type=int, help='override the number of clusters')
    p.add_argument('--appsets', type=int, help='override the number of ApplicationSets')
    p.add_argument('--scenarios',
                   help='comma-separated subset of a,b,c,d,e (a always runs first; default a-e, '
                        'grpc: a only), or f alone (manifest delivery: its own fleet, see '
                        'bench/fleet/README.md)')
    p.add_argument('--ci', action='store_true',
                   help='CI mode: shorter steady state and write phases (sanitizer builds)')
    p.add_argument('--transport', choices=('mqtt', 'kafka', 'grpc'), default='mqtt',
                   help='grpc: the services on the real Maestro server (tools/stack), fleet-sim '
                        "behind it on mosquitto; scenario (a) only, with Maestro's CPU and a "
                        'perf profile of it')
    p.add_argument('--compare-mqtt', action='store_true',
                   help='grpc: first run (a) over MQTT on a stack of the same size (work dir '
                        '<work-dir>-mqtt), then over gRPC, and report the rates gRPC / MQTT')
    p.add_argument('--perf-seconds', type=int, default=600,
                   help='grpc: longest perf profile of the Maestro server from the dispatcher '
                        'start (it ends when every Application is on its agent); 0: none')
    p.add_argument('--maestro-replicas', type=int, default=1,
                   help='grpc: Maestro server instances on its one database (start-maestro '
                        'REPLICAS, 1-9); the services use the first, Maestro\'s CPU and '
                        '/metrics are summed over all')
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
    p.add_argument('--restart-changes', type=int, default=100,
                   help='(c) Applications changed during the dispatcher restart, each timed to '
                        'the broker (MQTT); 0: none')
    p.add_argument('--restart-change-after', type=float,
                   help='(c) seconds after the dispatcher restart to change them (full 30, '
                        'small 5: a small fleet is listed in seconds)')
    p.add_argument('--verify-list-max', type=int, default=50000,
                   help='(a) up to this many Applications: LIST them all to check statuses')
    p.add_argument('--verify-sample', type=int, default=3000)
    p.add_argument('--renders-in-flight', type=int, default=4,
                   help='(f) the dispatcher\'s manifests.maxRendersInFlight (its default 4)')
    p.add_argument('--resolve-interval', type=int,
                   help='(f) the dispatcher\'s manifests.resolveInterval in s (default 20, --ci 5; '
                        'Argo CD\'s own default is 180)')
    p.add_argument('--note', default='',
                   help='recorded in the report (meta.note): e.g. what else ran on the machine')
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
    if a.restart_change_after is None:
        a.restart_change_after = 30 if full else 5
    if a.timeout is None:
        a.timeout = 7200 if full else 1200
    if a.ci:
        a.settle_quiet = min(a.settle_quiet, 5)
    a.work_dir = os.path.abspath(a.work_dir or f'/tmp/mmi-fleet-bench-{a.scale}')
    a.json = a.json or os.path.join(a.work_dir, 'report.json')
    if a.scenarios is None:
        a.scenarios = 'a' if a.transport == 'grpc' else 'a,b,c,d,e'
    bad = [s for s in a.scenarios.split(',') if s not in SCENARIOS]
    if bad:
        p.error(f'unknown scenarios {bad}')
    if 'f' in a.scenarios.split(',') and a.scenarios != 'f':
        p.error('scenario f runs alone: its fleet is in manifest delivery, the others\' is not')
    if a.transport == 'grpc' and a.scenarios != 'a':
        # (b)-(e) read MQTT-only figures (the dispatcher's spec topics timed by mosquitto_sub in
        # (c), its own broker session) or were never run through Maestro
        p.error('--transport grpc runs scenario a only (--scenarios a)')
    if a.compare_mqtt and a.transport != 'grpc':
        p.error('--compare-mqtt compares a gRPC run with MQTT: it needs --transport grpc')
    if not 1 <= a.maestro_replicas <= 9:
        p.error('--maestro-replicas must be 1 to 9')
    if a.maestro_replicas > 1 and a.transport != 'grpc':
        p.error('--maestro-replicas needs --transport grpc')
    if a.perf_seconds < 0:
        p.error('--perf-seconds must be 0 (no profile) or more')
    return a
