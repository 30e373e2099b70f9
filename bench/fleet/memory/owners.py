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

# (owner, substrings of a function name). Each stack goes to the owner of its innermost frame
# that names one: the code that asked for the bytes, not a caller further up (frames carry their
# signatures, so matching the whole stack would let an argument type decide).
RULES = [
    ('dispatch state: tracked resources (node map, strings)', ('DispatchState::',)),
    ('warm load: dispatch-state rows read from PostgreSQL',
     ('Reconciler::LoadState', 'ForEachResource', 'DispatchedResource::DispatchedResource')),
    ('events built for the outbox (bundle, metadata, event)',
     ('MakeSpecEvent', 'EncodedWorkMeta', 'EncodeStructuredJson', 'BuildDispatch',
      'PendingChange')),
    ('outbox: entries waiting for the broker', ('Outbox::',)),
    ('spec resync responder', ('SpecResync',)),
    ('informer cache: MessagePack bytes', ('InformerStore::MakeEntry', 'InformerStore::MakeListedEntry')),
    ('informer: watch events kept while a list is read', ('ListBuffer::',)),
    ('informer handler: DispatchRelevantChange copies', ('DispatchRelevantChange', 'WithoutBookkeeping')),
    ('informer cache: hash map slots and keys', ('InformerStore::',)),
    ('informer: list pages and watch events being parsed (nlohmann trees)',
     ('ParseWatchEvent', 'HttpKubeClient::List', 'PagedList', 'ListPages', 'Informer::')),
    ('reconciler: key queue (WorkQueue)', ('WorkQueue',)),
    ('PostgreSQL client (libpq/libpqxx)', ('ConnectionPool', 'pqxx::', 'PQexec', 'PQgetResult')),
    # manifest delivery (issue #38, scenario (f))
    ('manifests: bundles built per decision (BuildManifestDispatch)',
     ('BuildManifestDispatch', 'ManifestAndConfig', 'SyncOrder', 'FeedbackRulesFor')),
    ('manifests: ManifestRenderer entries and pending asks', ('ManifestRenderer::',)),
    ('manifests: RenderCache (renders, revisions, waiters)', ('RenderCache::',)),
    ('manifests: manifest_renders rows written (ManifestWrites)', ('ManifestWrites::',)),
    ('manifests: repo-server client (gRPC, protobuf)', ('RepoServerClient', 'argocd_repo::', 'grpc::')),
    ('GitOpsCluster controller', ('GitOpsCluster', 'AppSetRefresh')),
    ('transport (MQTT)', ('Mqtt', 'MQTT', 'mosquitto')),
    ('kube client: curl/TLS, threads', ('HttpKubeClient', 'CurlTransport', 'LeaderElector')),
    ('metrics', ('prometheus::',)),
    ('reconciler: other', ('Reconciler::',)),
]


def owner(stack):
    for frame in reversed(stack.split(';')):
        name = frame.split('(', 1)[0]
        for owner_name, keys in RULES:
            if any(k in name for k in keys):
                return owner_name
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
