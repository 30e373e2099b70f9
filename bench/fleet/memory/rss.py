#!/usr/bin/env python3
"""[Record of the 2026-11-26 measurement, kept as it ran: paths of its clean clone /tmp/h7 and
the H7_* variables of dispatcher-wrapper.sh as of 6868a54. To measure the code of now from the
repository use dispatcher_rss.py and the MMI_* variables of dispatcher-wrapper.sh.]
Samples RSS of my dispatcher (exe = /tmp/h7/build/release/.../dispatcher) every N s, with a few
of its metrics. Usage: h7-rss.py OUT.csv [interval]. Runs until killed."""
import os, sys, time, re, urllib.request
REAL = '/tmp/h7/build/release/services/dispatcher/dispatcher'
out, interval = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
METRICS = ['mmi_kube_cache_objects{resource="applications.argoproj.io"}', 'mmi_dispatcher_tracked_resources',
           'mmi_dispatch_queue_depth', 'mmi_dispatcher_outbox_pending']
def find():
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            if os.readlink(f'/proc/{p}/exe') == REAL:
                return int(p)
        except OSError: pass
    return None
def kib(pid, fname, key):
    try:
        with open(f'/proc/{pid}/{fname}') as f:
            for line in f:
                if line.startswith(key + ':'): return int(line.split()[1])
    except OSError: return None
def metrics(pid):
    try:
        cmd = open(f'/proc/{pid}/cmdline').read().split('\0')
        port = next(a.split(':')[-1] for a in cmd if a.startswith('--admin-listen='))
        body = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=2).read().decode()
    except Exception: return {}
    vals = {}
    for line in body.splitlines():
        for m in METRICS:
            if line.split(' ')[0] == m:
                vals[m] = line.split()[-1]
    return vals
t0 = time.time()
with open(out, 'a') as f:
    f.write('utc,t_s,pid,rss_mib,anon_mib,threads,' + ','.join(re.sub(r'\{.*', '', m) for m in METRICS) + '\n'); f.flush()
    while True:
        pid = find()
        if pid:
            rss = kib(pid, 'status', 'VmRSS'); anon = kib(pid, 'status', 'RssAnon'); th = kib(pid, 'status', 'Threads')
            mv = metrics(pid)
            f.write(f"{time.strftime('%H:%M:%S', time.gmtime())},{time.time()-t0:.0f},{pid},{(rss or 0)/1024:.1f},{(anon or 0)/1024:.1f},{th},"
                    + ','.join(mv.get(m, '') for m in METRICS) + '\n'); f.flush()
        time.sleep(interval)
