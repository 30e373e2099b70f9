#!/usr/bin/env python3
"""[Record of the 2026-11-26 measurement, kept as it ran: paths of its clean clone /tmp/h7 and
the H7_* variables of dispatcher-wrapper.sh as of 6868a54. To measure the code of now from the
repository use dispatcher_rss.py and the MMI_* variables of dispatcher-wrapper.sh.]
h7 driver: the fleet bench's own setup and scenarios (a) and (c), with memory probes between them.
Usage: H7_HEAPTRACK=1 H7_ARENA=2 h7-drive.py LABEL [fleet_bench args...]
Phases (marks in /tmp/h7-<LABEL>-marks.log): setup, (a) cold start, 120 s steady, malloc_stats +
malloc_trim probe, relist (etcd compacted + kube-apiserver restarted: the dispatcher's watch gets
410 and lists again while its old cache is kept), 60 s, probe, (c) restarts, 60 s, probe, stop."""
import json, os, signal, subprocess, sys, time
sys.path.insert(0, '/tmp/h7/bench/fleet'); sys.path.insert(0, '/tmp/h7/tools/stack')
import fleet_bench as fb  # noqa: E402
from mmi_stack import Stack, StackConfig, prepare_work_dir  # noqa: E402
from fleetbench import prom  # noqa: E402

label = sys.argv[1]
args = fb.parse_args(sys.argv[2:])
marks = open(f'/tmp/h7-{label}-marks.log', 'a')
REAL = '/tmp/h7/build/release/services/dispatcher/dispatcher'

def mark(msg, **kv):
    line = f"{time.strftime('%H:%M:%S', time.gmtime())} {msg} {json.dumps(kv) if kv else ''}"
    print('MARK ' + line, flush=True); marks.write(line + '\n'); marks.flush()

def rss_mib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return round(int(line.split()[1]) / 1024, 1)

def probe(stack, tag):
    """malloc_stats() into the dispatcher's log, then malloc_trim(0); RSS before and after."""
    pid = stack.pid('dispatcher')
    before = rss_mib(pid)
    logf = os.path.join(args.work_dir, 'logs', 'dispatcher.log')
    off = os.path.getsize(logf)
    gdb = ['gdb', '-p', str(pid), '-batch', '-nx', '-iex', 'set auto-solib-add off',
           '-ex', 'sharedlibrary libc.so', '-ex', 'call (void)malloc_stats()']
    r1 = subprocess.run(gdb, capture_output=True, text=True, timeout=120)
    time.sleep(1)
    with open(logf, errors='replace') as f:
        f.seek(off); stats = [l.rstrip() for l in f if 'bytes' in l or 'Arena' in l or 'Total' in l or 'mmap' in l]
    mid = rss_mib(pid)
    t = time.monotonic()
    r2 = subprocess.run(gdb[:-2] + ['-ex', 'call (int)malloc_trim(0)'], capture_output=True, text=True, timeout=300)
    trim_s = round(time.monotonic() - t, 1)
    time.sleep(2)
    after = rss_mib(pid)
    totals = [l for l in stats if l.startswith(('Total', 'max mmap'))]
    mark(f'probe {tag}', pid=pid, rss_before=before, rss_after_stats=mid, rss_after_trim=after,
         trim_gdb_s=trim_s, malloc_stats_totals=totals, arenas=sum(1 for l in stats if l.startswith('Arena')),
         gdb_err=(r1.stderr + r2.stderr)[-300:])
    with open(f'/tmp/h7-{label}-malloc_stats-{tag}.txt', 'w') as f:
        f.write('\n'.join(stats) + '\n')

def hold(bench, seconds, tag):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(5)
    mark(f'held {seconds}s {tag}')

def relist(stack):
    """compact etcd, restart kube-apiserver: the watch resumes from a compacted version, gets 410
    and lists again while the old cache is kept."""
    m0 = stack.metrics('dispatcher')
    rel0 = prom.total(m0, 'mmi_kube_relists_total', {'resource': 'applications.argoproj.io'})
    rev = stack.compact_etcd()
    mark('etcd compacted', revision=rev)
    stack.restart_kube_apiserver()
    mark('kube-apiserver restarted', relists_before=rel0)
    t = time.monotonic()
    while time.monotonic() - t < 900:
        time.sleep(2)
        if not stack.running('dispatcher'):
            mark('dispatcher exited during the relist'); return
        m = stack.metrics('dispatcher')
        if prom.total(m, 'mmi_kube_relists_total', {'resource': 'applications.argoproj.io'}) > rel0:
            break
    mark('dispatcher relisted', relists=prom.total(stack.metrics('dispatcher'), 'mmi_kube_relists_total'),
         waited_s=round(time.monotonic() - t))

prepare_work_dir(args.work_dir)
sampler = subprocess.Popen(['/tmp/h7-rss.py', f'/tmp/h7-{label}-rss.csv', '2'],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
mark('sampler', pid=sampler.pid, env={k: os.environ.get(k) for k in ('H7_HEAPTRACK', 'H7_ARENA')},
     argv=sys.argv[2:])
def on_term(signum, _frame):
    raise KeyboardInterrupt(f'signal {signum}')
signal.signal(signal.SIGTERM, on_term)
stack = Stack(StackConfig(work_dir=args.work_dir, build_dir=args.build_dir, transport=args.transport,
                          clusters=args.clusters, log_level=args.log_level, helm_set=list(args.set),
                          ready_timeout=float(min(max(args.timeout, 600), 3600))))
bench = fb.FleetBench(args, stack)
try:
    bench.report['meta'] = {'started': fb.iso_now()}
    mark('setup start', apps=bench.n_apps)
    bench.setup()
    mark('setup done')
    res = bench.scenario_a()
    mark('a done', **{k: v for k, v in res.items() if k in ('dispatcher_ready_s', 'all_published_s',
         'all_on_spokes_s', 'all_acknowledged_s', 'peak_rss_mib', 'failures')})
    if os.environ.get('H7_MODE') == 'heap':
        # One heaptrack file per dispatcher process; each ended by SIGKILL so that heaptrack's
        # "leaked" = the live heap at that moment (a SIGTERM exit frees everything first).
        hold(bench, 120, 'steady after a')
        stack.kill_process('dispatcher'); mark('P1 killed (cold start + 120 s steady)')
        stack.start_dispatcher(); mark('P2 ready (restart)')
        mark('P2 settled', s=bench.settle('dispatcher', args.settle_max))
        hold(bench, 60, 'P2 steady')
        stack.kill_process('dispatcher'); mark('P2 killed (restart + steady)')
        stack.start_dispatcher(); mark('P3 ready')
        mark('P3 settled', s=bench.settle('dispatcher', args.settle_max))
        hold(bench, 30, 'P3 before relist')
        relist(stack)
        hold(bench, 60, 'P3 after relist')
        stack.kill_process('dispatcher'); mark('P3 killed (relist + steady)')
    else:
        hold(bench, 120, 'steady after a')
        probe(stack, 'steady1')
        hold(bench, 30, 'after trim')
        relist(stack)
        hold(bench, 60, 'after relist')
        probe(stack, 'after_relist')
        bench.steady = None
        res = bench.scenario_c()
        d = res.get('dispatcher', {})
        mark('c done', dispatcher={k: d.get(k) for k in ('exit_code', 'stop_s', 'ready_after_start_s',
             'settled_after_start_s', 'republished')}, failures=res.get('failures'))
        hold(bench, 60, 'after c')
        probe(stack, 'after_restart')
except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001
    import traceback
    mark('error', error=f'{type(e).__name__}: {e}', tb=traceback.format_exc()[-2000:])
finally:
    stack.stop()
    sampler.terminate(); sampler.wait()
    mark('stopped')
