#!/usr/bin/env python3
"""Groups a heaptrack flamegraph stack file (heaptrack_print -t 0 -F, frame;frame;... bytes) by owner.
Usage: h7-owners.py STACKS [apps]  -> table: owner, MiB, bytes per Application."""
import sys, collections
path = sys.argv[1]; apps = int(sys.argv[2]) if len(sys.argv) > 2 else 30000
TRACKED = 'Reconciler::Tracked'
def owner(s):
    if ('Reconciler::LoadState' in s or 'DispatchStore::ForEachResource' in s) and 'Reconciler::InstallState' not in s:
        return 'warm load: LoadState rows (reconciler.cc:109-141)'
    if ('pqxx' in s or 'PQ' in s or 'ConnectionPool' in s or 'DeletionListener' in s) and 'InstallState' not in s:
        return 'PostgreSQL client (libpq/libpqxx)'
    if 'Outbox::' in s:
        return 'outbox (outbox.h:101 items_, by_resource_)'
    if 'SpecResync' in s:
        return 'spec resync responder'
    if 'Reconciler::EnqueueAll' in s and 'Informer::Materialize' in s:
        return 'EnqueueAll: List() decodes every cached object (reconciler.cc:218, informer.cc:205-225)'
    if 'Reconciler::Enqueue' in s or 'Reconciler::EnqueueAfter' in s or 'Reconciler::EnqueueAll' in s:
        return 'reconciler key queue (queue_/queued_, reconciler.h:260-261)'
    if 'Reconciler::' in s and ('BuildDispatch' in s or 'MakeSpecEvent' in s or 'EncodeStructuredJson' in s
                                or 'MetadataJson' in s or 'PropagatedRequestOf' in s):
        return 'reconciler: payload/event being built or recorded (PendingChange)'
    if 'Reconciler::' in s and 'raw_hash_set' in s and TRACKED in s.split('Reconciler::', 1)[1]:
        return 'reconciler: resources_ slots (Tracked, reconciler.h:266)'
    if ('Reconciler::Reconcile' in s or 'Reconciler::InstallState' in s or 'Reconciler::OnRecorded' in s) and 'raw_hash_set' in s:
        return 'reconciler: by_key_ slots (reconciler.h:267)'
    if 'Reconciler::' in s:
        return 'reconciler: Tracked/by_key_ strings'
    if 'Informer::MakeEntry' in s:
        return 'informer cache: MessagePack bytes'
    if 'Informer::BufferWhileListing' in s:
        return 'informer: watch events buffered during a list'
    if 'DispatchRelevantChange' in s or 'WithoutBookkeeping' in s:
        return 'informer handler: DispatchRelevantChange copies'
    if 'Informer::Replace' in s or 'Informer::ApplyChange' in s:
        if 'AppEventHandler' in s or 'ManagedClusterTracker' in s or 'GitOpsCluster' in s:
            return 'handlers called from the informer (other)'
        return 'informer cache: hash map slots (objects_, informer.cc:597-643)'
    if 'Informer::CollectInitial' in s and 'ParseWatchEvent' not in s.split('Informer::CollectInitial', 1)[1] \
            and 'Informer::Prepare' not in s:
        if 'ObjectKey' in s:
            return 'informer cache: key strings'
        return 'informer: streamed list buffer (InitialEvents items/index)'
    if 'Informer::StartPagedList' in s and 'HttpKubeClient::List' not in s and 'ParseWatchEvent' not in s:
        if 'ObjectKey' in s:
            return 'informer cache: key strings'
        return 'informer: paged list buffer (listed vector)'
    if 'GitOpsCluster' in s or 'AppSetRefresh' in s:
        return 'GitOpsCluster controller (own calls)'
    if 'ParseWatchEvent' in s or ('HttpKubeClient::List' in s and 'Informer' in s) or 'Informer::Prepare' in s:
        return 'informer cache: nlohmann::json trees'
    if 'Informer::' in s and 'ObjectKey' in s:
        return 'informer cache: key strings'
    if 'pqxx' in s or 'PQ' in s or 'ConnectionPool' in s or 'DeletionListener' in s:
        return 'PostgreSQL client (libpq/libpqxx)'
    if 'MQTT' in s or 'Mqtt' in s or 'paho' in s.lower():
        return 'transport (Paho MQTT)'
    if 'Informer::' in s or 'HttpKubeClient' in s or 'CurlTransport' in s or 'LeaderElector' in s:
        return 'kube client: curl/TLS, informer threads (other)'
    if 'prometheus' in s:
        return 'metrics'
    return 'other (startup, TLS, libraries)'
agg = collections.Counter(); top = collections.defaultdict(collections.Counter)
for line in open(path, errors='replace'):
    line = line.rstrip('\n'); i = line.rfind(' ')
    try: v = int(line[i+1:])
    except ValueError: continue
    s = line[:i]; o = owner(s); agg[o] += v
    fr = [f for f in s.split(';') if 'mmi::' in f]
    top[o][(fr[-1][:110] if fr else s.split(';')[-1][:110])] += v
tot = sum(agg.values())
print('| owner | MiB | bytes/App | top allocating frame |\n|---|---:|---:|---|')
for o, v in agg.most_common():
    f, fv = top[o].most_common(1)[0]
    print(f'| {o} | {v/1048576:.1f} | {v/apps:,.0f} | {f} ({fv/1048576:.1f}) |')
print(f'| **total** | **{tot/1048576:.1f}** | **{tot/apps:,.0f}** | |')
