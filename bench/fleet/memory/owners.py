#!/usr/bin/env python3
"""Groups a heaptrack flamegraph stack file by owner, with the code's names since 2026-11-27 (the
tables of 2026-11-26 used the rules for the code of then: the JSON-tree cache, `Reconciler::Tracked`;
they are in this file's history).

    heaptrack_print -f FILE -t 0 -p 0 -a 0 -T 0 --flamegraph-cost-type peak -F S.stacks
    bench/fleet/memory/owners.py S.stacks 30000

Prints a Markdown table: owner, MiB, bytes per Application, the top allocating frame.
"""
import collections
import sys

# (owner, predicate on the ';'-joined stack), first match wins.
RULES = [
    ('warm load: dispatch-state rows read from PostgreSQL',
     lambda s: ('Reconciler::LoadState' in s or 'ForEachResource' in s)
     and 'Reconciler::InstallState' not in s),
    ('PostgreSQL client (libpq/libpqxx)',
     lambda s: ('pqxx' in s or 'PQ' in s or 'ConnectionPool' in s) and 'InstallState' not in s),
    ('outbox: events waiting for the broker', lambda s: 'Outbox::' in s),
    ('spec resync responder', lambda s: 'SpecResync' in s),
    ('dispatch state: tracked resources (node map, strings)',
     lambda s: 'DispatchState::' in s or 'TrackedResource' in s or 'Reconciler::InstallState' in s),
    ('reconciler: payload/event being built or recorded',
     lambda s: 'Reconciler::' in s and ('BuildDispatch' in s or 'SpecEvent' in s
                                        or 'EncodeStructuredJson' in s or 'PendingChange' in s)),
    ('reconciler: key queue (WorkQueue)', lambda s: 'WorkQueue' in s),
    ('reconciler: other', lambda s: 'Reconciler::' in s),
    ('informer cache: MessagePack bytes', lambda s: 'InformerStore::MakeEntry' in s
     or 'InformerStore::MakeListedEntry' in s or 'to_msgpack' in s),
    ('informer: watch events kept while a list is read', lambda s: 'ListBuffer::' in s),
    ('informer handler: DispatchRelevantChange copies',
     lambda s: 'DispatchRelevantChange' in s or 'WithoutBookkeeping' in s),
    ('informer cache: hash map slots and keys', lambda s: 'InformerStore::' in s),
    ('informer: list pages and watch events being parsed (nlohmann trees)',
     lambda s: 'ParseWatchEvent' in s or 'HttpKubeClient::List' in s or 'PagedList' in s
     or 'ListPages' in s or 'Informer::' in s),
    ('GitOpsCluster controller', lambda s: 'GitOpsCluster' in s or 'AppSetRefresh' in s),
    ('transport (Paho MQTT)', lambda s: 'MQTT' in s or 'Mqtt' in s or 'paho' in s.lower()),
    ('kube client: curl/TLS, threads', lambda s: 'HttpKubeClient' in s or 'CurlTransport' in s
     or 'LeaderElector' in s),
    ('metrics', lambda s: 'prometheus' in s),
]


def owner(stack):
    for name, test in RULES:
        if test(stack):
            return name
    return 'other (startup, TLS, libraries)'


def main():
    path = sys.argv[1]
    apps = int(sys.argv[2]) if len(sys.argv) > 2 else 30000
    by_owner = collections.Counter()
    frames = collections.defaultdict(collections.Counter)
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            i = line.rfind(' ')
            try:
                value = int(line[i + 1:])
            except ValueError:
                continue
            stack = line[:i]
            o = owner(stack)
            by_owner[o] += value
            ours = [fr for fr in stack.split(';') if 'mmi::' in fr]
            frames[o][(ours[-1] if ours else stack.split(';')[-1])[:110]] += value
    total = sum(by_owner.values())
    print('| owner | MiB | bytes/App | top allocating frame (MiB) |\n|---|---:|---:|---|')
    for o, v in by_owner.most_common():
        frame, fv = frames[o].most_common(1)[0]
        print(f'| {o} | {v / 1048576:.1f} | {v / apps:,.0f} | {frame} ({fv / 1048576:.1f}) |')
    print(f'| **total** | **{total / 1048576:.1f}** | **{total / apps:,.0f}** | |')


if __name__ == '__main__':
    main()
