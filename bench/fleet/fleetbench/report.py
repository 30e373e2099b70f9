"""The bench's report: written as JSON (atomically), the run's facts (commit, machine), and the
printed summary."""

import json
import os
import platform
import subprocess

from .common import mib
from .goals import format_rows

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


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
                     'dispatcher', 'status_sink', 'peak_rss_mib', 'hub_check', 'maestro'):
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
        if 'maestro' in res:
            print_maestro(res['maestro'])
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
    if r.get('goals'):
        print('-' * 78)
        issue = '#38' if 'f_manifest_delivery' in r['scenarios'] else '#21'
        print(f'issue {issue} goals (reported, not asserted):')
        for line in format_rows(r['goals']):
            print(line)
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


def print_maestro(m):
    """Scenario (a) over gRPC: Maestro's cost next to ours, and where its CPU went."""
    c, pg = m.get('cost', {}), m.get('pg_split', {})
    print(f"  Maestro vs ours over the window: ours {c.get('ours_cpu_seconds')} s "
          f"({c.get('ours_us_per_application')} us/Application), Maestro "
          f"{c.get('maestro_cpu_seconds')} s ({c.get('maestro_us_per_application')} "
          f"us/Application: "
          f"process {c.get('maestro_process_cpu_seconds')} s + PostgreSQL share "
          f"{c.get('maestro_postgres_cpu_seconds')} s); ours/Maestro {c.get('ours_over_maestro')} "
          f"(goal {c.get('goal_ours_over_maestro')}; process only "
          f"{c.get('ours_over_maestro_process_only')})")
    print(f"  PostgreSQL split: {pg}")
    print(f"  rates: {m.get('rates')}")
    print(f"  Maestro's controllers ({m.get('instances', 1)} instance(s), summed): "
          f"{m.get('controllers')}")
    perf = m.get('perf')
    if perf:
        if perf.get('error'):
            print(f"  perf: {perf['error']}")
        else:
            print(f"  perf ({perf.get('seconds')} s, {perf.get('samples')} samples): categories "
                  f"{perf.get('categories_pct')}")
            print(f"    work paths (inclusive) {perf.get('work_paths_inclusive_pct')}")
            print(f"    packages (self) {perf.get('top_packages_self_pct')[:8]}")
            print(f"    functions (self) {perf.get('top_functions_self_pct')[:8]}")


def print_comparison(r):
    """--compare-mqtt: the two runs' cold dispatch rates."""
    c = r.get('compare_mqtt', {})
    print('=' * 78)
    print(f"gRPC vs MQTT, scenario (a), one after the other (MQTT ok: {c.get('mqtt_ok')}):")
    rates = c.get('rates') or {}
    for side in ('grpc', 'mqtt', 'grpc_over_mqtt'):
        print(f"  {side}: {rates.get(side)}")
    print(f"result: {'OK' if r.get('ok') else 'FAILED'}")
