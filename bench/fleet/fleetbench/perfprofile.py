"""A CPU profile of one process during a window (linux perf), summarised by function, by Go
package and by what the process was doing (its database, JSON, gRPC, MQTT, the Go runtime).

`PerfRecorder` runs `perf record -g -p <pid>` (frame-pointer call chains: Go binaries keep frame
pointers and symbols) until stopped; `summarise()` is pure: `perf script` text in, the report's
`perf` dict out.
"""

import collections
import os
import shutil
import signal
import struct
import subprocess
import time

# What a sample's stack shows the process doing: the first category whose prefixes match any
# frame counts the sample (inclusive, so the shares add up to at most 100 % only per category;
# the order settles a sample that matches several: a JSON decode inside a database call is
# JSON, an MQTT publish inside the gRPC handler is MQTT).
CATEGORIES = (
    ('garbage collection', ('runtime.gcBgMarkWorker', 'runtime.gcDrain', 'runtime.gcStart',
                            'runtime.gcAssistAlloc', 'runtime.bgsweep', 'runtime.bgscavenge',
                            'runtime.markroot')),
    ('JSON (encoding/json, json-iterator, gorm datatypes)',
     ('encoding/json.', 'github.com/json-iterator/', 'sigs.k8s.io/json', 'gorm.io/datatypes.')),
    ('protobuf', ('google.golang.org/protobuf/',)),
    ('MQTT to the agents (paho)', ('github.com/eclipse/paho',
                                   'github.com/cloudevents/sdk-go/protocol/mqtt')),
    ('PostgreSQL client (gorm, database/sql, pgx, pq)',
     ('gorm.io/', 'database/sql.', 'github.com/jackc/', 'github.com/lib/pq.')),
    ('gRPC and HTTP/2 (source API)', ('google.golang.org/grpc', 'golang.org/x/net/http2')),
    ('logging (klog, zap)', ('k8s.io/klog', 'go.uber.org/zap')),
    ('Go scheduler and syscalls', ('runtime.schedule', 'runtime.findRunnable', 'runtime.netpoll',
                                   'runtime.mcall', 'runtime.park_m', 'syscall.',
                                   'internal/poll.')),
)


def go_package(symbol, dso):
    """The Go package of a frame (`encoding/json`, `gorm.io/gorm`), `kernel`, or the library."""
    if 'kallsyms' in dso or dso.startswith('[kernel'):
        return 'kernel'
    if not symbol or symbol == '[unknown]':
        return os.path.basename(dso.strip('()')) or '[unknown]'
    head, sep, tail = symbol.rpartition('/')
    return head + sep + tail.split('.', 1)[0]


def parse_samples(text):
    """perf script output (ip, sym, dso per frame) -> [[(ip, symbol, dso), ...] leaf first]."""
    samples, frames = [], None
    for line in text.splitlines():
        if not line.strip():
            if frames:
                samples.append(frames)
            frames = None
            continue
        if not line[0].isspace():
            if frames:
                samples.append(frames)
            frames = []
            continue
        if frames is None:
            continue
        parts = line.strip().split(' ', 1)
        rest = parts[1] if len(parts) > 1 else ''
        sym, _, dso = rest.rpartition(' (')
        frames.append((parts[0], sym.strip(), '(' + dso if dso else ''))
    if frames:
        samples.append(frames)
    return samples


def elf_load_base(path):
    """The address the first PT_LOAD segment maps file offset 0 to (0x400000 for a non-PIE Go
    binary): perf prints an unresolved frame's ip as an offset into the file."""
    with open(path, 'rb') as f:
        head = f.read(64)
        if head[:4] != b'\x7fELF' or head[4] != 2:
            raise ValueError(f'{path}: not a 64-bit ELF file')
        phoff = struct.unpack_from('<Q', head, 0x20)[0]
        phentsize, phnum = struct.unpack_from('<HH', head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr = struct.unpack_from('<IIQQ', table, i * phentsize)
        if p_type == 1:
            return p_vaddr - p_offset
    raise ValueError(f'{path}: no PT_LOAD segment')


def resolve_go_symbols(samples, binary):
    """Names the unresolved frames of a stripped Go binary (built with -ldflags '-s -w', as
    tests/peers/build/maestro.sh builds Maestro): `go tool addr2line` reads the binary's pclntab,
    which stripping keeps. Returns how many distinct addresses it named (0 without `go`)."""
    name = os.path.basename(binary)
    todo = sorted({ip for frames in samples for ip, sym, dso in frames
                   if sym == '[unknown]' and os.path.basename(dso.strip('()')) == name})
    go = shutil.which('go') or ('/usr/local/go/bin/go' if os.access('/usr/local/go/bin/go', os.X_OK)
                                else None)
    if not todo or go is None:
        return 0
    base = elf_load_base(binary)
    query = ''.join(f'{hex(int(ip, 16) + base)}\n' for ip in todo)
    out = subprocess.run([go, 'tool', 'addr2line', binary], input=query, capture_output=True,
                         text=True, check=False).stdout.splitlines()
    names = {ip: out[2 * i] for i, ip in enumerate(todo) if 2 * i < len(out) and out[2 * i] != '?'}
    for frames in samples:
        for i, (ip, sym, dso) in enumerate(frames):
            if sym == '[unknown]' and ip in names:
                frames[i] = (ip, names[ip], dso)
    return len(names)


def summarise(text, top=15, binary=None, paths=()):
    """Self time by function and by package (the leaf frame), the categories above and `paths`
    ((label, substring of a frame's name): what the process was serving) inclusive, as
    percentages of the samples; `binary`: a stripped Go binary to name frames from
    (resolve_go_symbols)."""
    samples = [s for s in parse_samples(text) if s]
    named = resolve_go_symbols(samples, binary) if binary else 0
    n = len(samples)
    if not n:
        return {'samples': 0}
    by_fn, by_pkg, by_cat = collections.Counter(), collections.Counter(), collections.Counter()
    by_path = collections.Counter()
    for frames in samples:
        _, sym, dso = frames[0]
        by_fn[sym if 'kallsyms' not in dso else f'[kernel] {sym}'] += 1
        by_pkg[go_package(sym, dso)] += 1
        names = [f[1] for f in frames]
        for label, marker in paths:
            if any(marker in name for name in names):
                by_path[label] += 1
        for cat, prefixes in CATEGORIES:
            if any(name.startswith(prefixes) for name in names):
                by_cat[cat] += 1
                break
        else:
            by_cat['other (Maestro, its handlers, the rest)'] += 1

    def pct(counter, k=top):
        return [[name, round(100.0 * c / n, 1)] for name, c in counter.most_common(k)]

    return {'samples': n, 'addresses_named_by_go_addr2line': named,
            'top_functions_self_pct': pct(by_fn),
            'top_packages_self_pct': pct(by_pkg),
            'categories_pct': pct(by_cat, len(CATEGORIES) + 1),
            'work_paths_inclusive_pct': [[label, round(100.0 * by_path[label] / n, 1)]
                                         for label, _ in paths],
            'kernel_self_pct': round(100.0 * by_pkg.get('kernel', 0) / n, 1)}


class PerfRecorder:
    """`perf record` of one process from start() until stop() (or max_seconds). Not thread-safe:
    one owner. None of it is fatal: without perf, or when it fails, summary() says why."""

    def __init__(self, pid, out_path, frequency=499, max_seconds=600, paths=()):
        self.pid, self.out_path, self.paths = pid, out_path, paths
        try:
            self.binary = os.readlink(f'/proc/{pid}/exe')
        except OSError:
            self.binary = None
        self.frequency, self.max_seconds = frequency, max_seconds
        self.proc, self.t0, self.seconds, self.error = None, None, None, None

    def start(self):
        perf = shutil.which('perf')
        if perf is None:
            self.error = 'perf not installed'
            return self
        self.log_path = self.out_path + '.log'
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(
                [perf, 'record', '-F', str(self.frequency), '-g', '-p', str(self.pid),
                 '-o', self.out_path, '--', 'sleep', str(self.max_seconds)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.t0 = time.monotonic()
        return self

    def stop(self):
        """Ends the recording (SIGINT: perf writes its file and exits)."""
        if self.proc is None or self.seconds is not None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.error = 'perf record did not stop within 60 s of SIGINT'
        # a recording that reached max_seconds ended by itself
        self.seconds = round(min(time.monotonic() - self.t0, self.max_seconds), 1)

    def summary(self):
        """The profile summarised (summarise()), with how it was taken."""
        self.stop()
        out = {'command': f'perf record -F {self.frequency} -g -p <maestro pid>',
               'seconds': self.seconds, 'data': self.out_path}
        if self.error or self.proc is None:
            out['error'] = self.error or 'not started'
            return out
        script = subprocess.run(['perf', 'script', '-F', 'comm,tid,time,event,ip,sym,dso', '-i',
                                 self.out_path], capture_output=True, text=True, check=False)
        if script.returncode != 0:
            out['error'] = f'perf script failed: {script.stderr.strip()[:500]}'
            return out
        out.update(summarise(script.stdout, binary=self.binary, paths=self.paths))
        return out
