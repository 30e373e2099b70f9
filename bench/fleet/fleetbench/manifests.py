"""Scenario (f): manifest delivery (ADR 0007) at fleet scale.

The Applications carry `apps.open-cluster-management.io/delivery: manifests`; the hub's real
argocd-repo-server renders their sources from a git server on loopback, the dispatcher sends one
ManifestBundle per (Application, cluster), fleet-sim's simulated agents report each manifest as
settled (tools/fleet-sim/simulated_object.h) and the sink writes the hub status. Every Application
of ApplicationSet `appset-NNN` reads source `src-NNN` of one repository: N = clusters x
ApplicationSets Applications on S = ApplicationSets sources, one distinct render request per
source and revision (same destination namespace everywhere, plain directories: the Application
name is not part of the render key).

Phases: the cold start (until every hub Application is Synced/Healthy at the first commit), a
commit that changes every source's rendered output, and a commit that changes none of it (a
README in every source)."""

import json
import os
import signal
import time
import urllib.request

from . import procstat, prom
from .common import NS, SCENARIO_NAMES, ScenarioFailure, log
from .window import window

DELIVERY_ANNOTATION = 'apps.open-cluster-management.io/delivery'
SOURCE_PREFIX = 'src-'
DEST_NAMESPACE = 'guestbook'  # examples/applicationset.yaml's destination namespace
# How often the dispatcher resolves each source's revision (manifests.resolveInterval), and the
# repo-server's own revision cache (ARGOCD_RECONCILIATION_TIMEOUT through start-argocd's
# APP_RESYNC) shorter than it, as in e2e_manifests: a commit is seen at the next resolve. --ci:
# 5 s, and the sink's statusResyncMinInterval 5 s instead of 30 s (a commit that changes no
# bundle reaches the hub through the sink's status resync), so CI waits less per commit.
RESOLVE_INTERVAL_S = 20
CI_RESOLVE_INTERVAL_S = 5


def source_files(index, generation):
    """The plain manifests of source `index` at `generation` (a change of the rendered output
    when it changes): a Deployment, a Service and a ConfigMap, the size of a small app."""
    name = f'app-{index:03d}'
    labels = {'app.kubernetes.io/name': name}
    deployment = {
        'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': name, 'labels': labels},
        'spec': {'replicas': 2, 'selector': {'matchLabels': labels},
                 'template': {'metadata': {'labels': labels, 'annotations': {
                     'bench/generation': str(generation)}},
                     'spec': {'containers': [{
                         'name': 'web', 'image': f'registry.example/bench/{name}:1.{generation}',
                         'ports': [{'containerPort': 8080}],
                         'resources': {'requests': {'cpu': '10m', 'memory': '16Mi'}}}]}}}}
    service = {'apiVersion': 'v1', 'kind': 'Service', 'metadata': {'name': name, 'labels': labels},
               'spec': {'selector': labels, 'ports': [{'port': 80, 'targetPort': 8080}]}}
    config = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': f'{name}-config'},
              'data': {'source': f'{SOURCE_PREFIX}{index:03d}', 'generation': str(generation)}}
    # JSON is YAML: the repo-server reads *.json and *.yaml alike in a directory source.
    return {'deployment.json': deployment, 'service.json': service, 'configmap.json': config}


def source_tree(count, generation, readme_note=''):
    """{path: text} of `count` source folders at `generation`; README.md (not a manifest)
    carries readme_note, so changing only it makes a commit with the same rendered output."""
    files = {}
    for i in range(count):
        d = f'{SOURCE_PREFIX}{i:03d}'
        for fname, obj in source_files(i, generation).items():
            files[f'{d}/{fname}'] = json.dumps(obj, indent=1) + '\n'
        files[f'{d}/README.md'] = f'Fleet bench source {i}. {readme_note}\n'
    return files


def app_state(app, sha):
    """(at sha and Synced/Healthy, has any status) of one hub Application."""
    s = app.get('status') or {}
    sync = s.get('sync') or {}
    ok = (sync.get('status') == 'Synced' and (s.get('health') or {}).get('status') == 'Healthy'
          and sync.get('revision') == sha)
    return ok, bool(sync.get('status'))


class ManifestsMixin:
    """Part of FleetBench: scenario (f)'s setup steps and the scenario."""

    # ---- setup (called by SeedingMixin.setup in manifest mode) ----

    def start_manifest_peers(self, setup):
        """The hub's Argo CD (repo-server, no CMP: the sources are plain directories) and the git
        server, before the other peers; the dispatcher's `manifests` settings as chart values."""
        st = self.stack
        resolve_s = self.args.resolve_interval or (
            CI_RESOLVE_INTERVAL_S if self.args.ci else RESOLVE_INTERVAL_S)
        hub = st.start_peer('start-kube', 'hub', 'ROLE=hub')
        st.argocd_env = st.start_peer(
            'start-argocd', 'argocd-hub', 'ROLE=hub', f"KUBECONFIG={hub['KUBECONFIG']}",
            f"KUBECTL={hub['KUBECTL']}", f'APP_RESYNC={max(1, resolve_s // 2)}', 'CMP=off')
        # The bench plays the ApplicationSet controller (the Applications are written into
        # etcd, as in scenarios a-e); the real one would generate the same Applications again.
        pid = int(st.argocd_env['APPSET_CONTROLLER_PID'])
        os.kill(pid, signal.SIGTERM)
        # Stack's git mirror (tools/stack spokes.py), its tree replaced by the sources.
        st.start_git_mirror()
        self.repo_url = st.mirror_repo_url()
        self.first_sha = st.commit_mirror(source_tree(len(self.appsets), 1), 'bench: sources')
        sets = [f"dispatcher.manifests.repoServer.address={st.argocd_env['REPO_SERVER_ADDR']}",
                'dispatcher.manifests.repoServer.tls.enabled=false',
                f'dispatcher.manifests.resolveInterval={resolve_s}s',
                f'dispatcher.manifests.argocdNamespace={NS}',
                f'dispatcher.manifests.maxRendersInFlight={self.args.renders_in_flight}']
        if self.args.ci:
            sets.append(f'statusSink.status.statusResyncMinInterval={CI_RESOLVE_INTERVAL_S}s')
        st.cfg.helm_set.extend(sets)
        setup['manifests'] = {'repo_server': st.argocd_env['REPO_SERVER_ADDR'],
                              'repo_url': self.repo_url, 'sources': len(self.appsets),
                              'helm_set': sets, 'appset_controller': 'stopped (the bench seeds)'}

    def manifest_template(self, tmpl, index):
        """An ApplicationSet template of manifest delivery reading source `index`."""
        tmpl['metadata'].setdefault('annotations', {})[DELIVERY_ANNOTATION] = 'manifests'
        tmpl['spec']['source'] = {'repoURL': self.repo_url, 'targetRevision': 'HEAD',
                                  'path': f'{SOURCE_PREFIX}{index:03d}'}

    # ---- the scenario ----

    def commit_sources(self, generation, readme_note, message):
        return self.stack.commit_mirror(source_tree(len(self.appsets), generation, readme_note),
                                        message)

    def repo_server_metrics(self):
        try:
            with urllib.request.urlopen(self.stack.argocd_env['REPO_SERVER_METRICS_URL'],
                                        timeout=10) as r:
                return prom.parse(r.read().decode())
        except Exception as e:  # noqa: BLE001 - reported as missing
            log(f'warning: repo-server /metrics: {e}')
            return {}

    def hub_counts(self, sha):
        """{'at_revision': Synced/Healthy at sha, 'with_status', 'checked'} over every hub
        Application (a paged LIST up to --verify-list-max, else a random sample's GETs)."""
        counts = {'at_revision': 0, 'with_status': 0, 'checked': 0}

        def check(app):
            ok, has = app_state(app, sha)
            counts['checked'] += 1
            counts['at_revision'] += ok
            counts['with_status'] += has

        self.each_hub_application(check, seed=11)
        return counts

    def sink_writes(self):
        return prom.total(self.metrics('status-sink'), 'mmi_status_updates_total', {'result': 'ok'})

    def await_hub_at(self, sha, t0, what, poll_s=3.0, marks=None):
        """Seconds from t0 until every checked hub Application is Synced/Healthy at sha (None at
        --timeout), with the last counts and, in `marks`, the seconds until every Application
        was published and had an agent status in PostgreSQL (cold start only: later phases
        update rows that exist). The hub is listed only once the sink has written as
        many statuses as there are Applications since t0 (each one's revision changes): a LIST
        of the fleet every few seconds would load the hub the run measures."""
        last_log = 0.0
        writes_before = self.sink_writes()
        c = {'at_revision': 0, 'with_status': 0, 'checked': 0}
        expected = self.n_apps if self.n_apps <= self.args.verify_list_max else \
            self.args.verify_sample
        marks = {} if marks is None else marks
        while True:
            el = time.monotonic() - t0
            if 'all_acknowledged_s' not in marks:
                published, acked = self.pg_progress()
                if published >= self.n_apps:
                    marks.setdefault('all_published_s', round(el, 1))
                if acked >= self.n_apps:
                    marks['all_acknowledged_s'] = round(el, 1)
            written = self.sink_writes() - writes_before
            # (after half the timeout the hub is listed anyway: the gate must not hide progress)
            if written >= self.n_apps or el > self.args.timeout / 2:
                c = self.hub_counts(sha)
                if c['checked'] >= expected and c['at_revision'] == c['checked']:
                    return round(time.monotonic() - t0, 1), c
            if el - last_log >= 30:
                last_log = el
                published, acked = self.pg_progress()
                log(f'  {what} {el:.0f} s: sink wrote {int(written)} statuses; hub at {sha[:8]} '
                    f'{c["at_revision"]} / {c["checked"]} (published {published}, acknowledged '
                    f'{acked} / {self.n_apps})')
            if el > self.args.timeout:
                return None, c
            dead = [x for x in ('dispatcher', 'status-sink', 'fleet-sim') if not self.stack.running(x)]
            if dead:
                raise ScenarioFailure(f'{", ".join(dead)} exited during {what}')
            time.sleep(poll_s)

    def render_snapshot(self):
        running = self.stack.running('dispatcher')
        repo = procstat.stats(int(self.stack.argocd_env['REPO_SERVER_PID']))
        return {'dispatcher': self.metrics('dispatcher') if running else {},
                'repo_server': self.repo_server_metrics(),
                'repo_server_cpu_s': repo['cpu_seconds'] if repo else None}

    def render_delta(self, before, after):
        """What the renders of a phase cost: GenerateManifest and ResolveRevision calls (the
        dispatcher's client, by result), the render cache's asks, the repo-server's git requests."""
        d_b, d_a = before['dispatcher'], after['dispatcher']
        calls = prom.delta_by_label(d_b, d_a, 'mmi_repo_server_requests_total',
                                    ('operation', 'result'))
        asks = prom.delta_by_label(d_b, d_a, 'mmi_dispatcher_render_asks_total', ('outcome',))
        git = prom.delta_by_label(before['repo_server'], after['repo_server'],
                                  'argocd_git_request_total', ('request_type',))
        by_op = {}
        for (op, result), v in calls.items():
            by_op.setdefault(op, {})[result] = int(v)
        cpu = None
        if before['repo_server_cpu_s'] is not None and after['repo_server_cpu_s'] is not None:
            cpu = round(after['repo_server_cpu_s'] - before['repo_server_cpu_s'], 2)
        durations = {op: prom.summary(prom.bucket_delta(
            d_b, d_a, 'mmi_repo_server_request_duration_seconds', {'operation': op}))
            for op in by_op}
        return {'repo_server_calls': by_op, 'repo_server_call_seconds': durations,
                'repo_server_cpu_seconds': cpu,
                'render_asks': {k[0]: int(v) for k, v in asks.items()},
                'repo_server_git_requests': {k[0]: int(v) for k, v in git.items()}}

    @staticmethod
    def generate_calls(delta):
        return sum((delta['repo_server_calls'].get('generate_manifest') or {}).values())

    def bundle_bytes(self):
        """The ManifestBundle payloads PostgreSQL holds (what was last sent), per cluster."""
        line = self.stack.psql(
            'SELECT count(*), coalesce(avg(b), 0), coalesce(max(b), 0), coalesce(min(b), 0), '
            'coalesce(sum(b), 0) FROM (SELECT cluster, sum(octet_length(payload)) AS b '
            'FROM dispatched_resources GROUP BY cluster) per_cluster').strip()
        clusters, avg, mx, mn, total = line.split('|')
        one = self.stack.psql('SELECT coalesce(avg(octet_length(payload)), 0) FROM '
                              'dispatched_resources').strip()
        return {'clusters': int(clusters), 'per_cluster_avg': round(float(avg)),
                'per_cluster_min': int(mn), 'per_cluster_max': int(mx), 'total': int(total),
                'per_bundle_avg': round(float(one or 0)),
                'bundles_per_cluster': len(self.appsets)}

    def phase_figures(self, before, after, r_before):
        """What a phase cost, between two snapshots: renders, spec and status events, hub
        writes, each process's CPU."""
        w = window(before, after)
        renders = self.render_delta(r_before, self.render_snapshot())
        return {'renders': renders, 'generate_manifest_calls': self.generate_calls(renders),
                'distinct_render_requests': len(self.appsets),
                'spec_events_published': w['broker_messages']['dispatcher_published'],
                'spec_events_received_by_agents': w['broker_messages']['fleet_sim_specs_received'],
                'status_events_received': w['status_sink']['events_received'],
                'status_events_dropped': w['status_sink']['events_dropped'],
                'agent_statuses_sent': w['broker_messages']['fleet_sim_statuses_sent'],
                'status_resync_requests': w['status_sink']['resync_requests'],
                'hub_writes': w['status_sink']['hub_writes'],
                'processes': w['processes'], 'seconds': w['seconds']}

    def phase_change(self, name, generation, readme_note, res):
        """One commit to every source; until every hub Application is Synced/Healthy at it."""
        before, r_before = self.snapshot(), self.render_snapshot()
        t0 = time.monotonic()
        sha = self.commit_sources(generation, readme_note, f'bench: {name}')
        log(f'(f) {name}: commit {sha[:8]}')
        took, counts = self.await_hub_at(sha, t0, name)
        # What arrives after every status is on the hub: nothing should, but late spec events
        # would otherwise escape the count.
        time.sleep(self.args.settle_quiet)
        after = self.snapshot()
        out = {'commit': sha, 'hub_all_at_revision_s': took, 'hub_counts': counts,
               **self.phase_figures(before, after, r_before)}
        if took is None:
            res['failures'].append(f'{name}: not every hub Application Synced/Healthy at '
                                   f'{sha[:8]} within {self.args.timeout} s ({counts})')
        return out, before, after

    def scenario_f(self):
        st, n = self.stack, self.n_apps
        res = {'applications': n, 'sources': len(self.appsets), 'clusters': len(self.clusters),
               'failures': []}
        first_sha = self.first_sha
        log(f'(f) manifest delivery: {n} Applications on {len(self.appsets)} sources at '
            f'{first_sha[:8]}; fleet-sim and status-sink, then the dispatcher')
        # No refresh churn: it models Argo CD bumping an Application's reconciledAt, and a
        # bundle of plain manifests has none (the agents would resend unchanged statuses).
        st.start_fleet_sim(['--refresh-min', '1', '--refresh-max', '0', '--changes-per-minute',
                            str(self.changes_per_minute)])
        st.start_status_sink()
        before, r_before = self.snapshot(), self.render_snapshot()
        t0 = time.monotonic()
        started = self.start_async('dispatcher')
        marks = {}
        took, counts = self.await_hub_at(first_sha, t0, 'cold start', marks=marks)
        not_ready = self.wait_ready('dispatcher', started, 60)
        if not_ready:
            res['failures'].append(not_ready)
        after = self.snapshot()
        published, acked = self.pg_progress()
        res['cold'] = {'commit': first_sha, 'dispatcher_ready_s': started['ready_s'],
                       'hub_all_synced_s': took, 'hub_counts': counts,
                       'published': published, 'acknowledged': acked, **marks,
                       **self.phase_figures(before, after, r_before)}
        if took is None:
            res['failures'].append(f'cold start: not every hub Application Synced/Healthy at '
                                   f'{first_sha[:8]} within {self.args.timeout} s ({counts})')
            return res
        res['cold_dispatch_per_s'] = round(n / took, 1)
        if marks.get('all_published_s'):
            res['cold_published_per_s'] = round(n / marks['all_published_s'], 1)
        res['bundle_bytes'] = self.bundle_bytes()
        self.keep_partial('f_' + SCENARIO_NAMES['f'], res)
        res['revision_change'], _, _ = self.phase_change(
            'revision_change', 2, 'generation 2', res)
        self.keep_partial('f_' + SCENARIO_NAMES['f'], res)
        res['no_output_change'], _, last = self.phase_change(
            'no_output_change', 2, 'generation 2, README edited only', res)
        whole = window(before, last)
        sink = whole['processes'].get('status-sink', {})
        events = whole['status_sink']['events_received']
        res['sink_cpu'] = {'cpu_seconds': sink.get('cpu_seconds'), 'events': events,
                           'hub_writes': whole['status_sink']['hub_writes'],
                           'us_per_event': round(sink['cpu_seconds'] / events * 1e6, 1)
                           if events and sink.get('cpu_seconds') is not None else None,
                           'window_s': whole['seconds']}
        res['dispatcher_peak_rss_mib'] = self.peak_rss_mib('dispatcher')
        res['peak_rss_mib'] = {k: self.peak_rss_mib(k) for k in ('dispatcher', 'status-sink',
                                                                  'fleet-sim')}
        res['postgres'] = self.pg_tables()
        # The machine may be shared (meta.machine has the load at the start).
        res['load_average_at_end'] = [round(x, 2) for x in os.getloadavg()]
        noop = res['no_output_change']
        sent = sum(noop['spec_events_published'].values())
        if sent:
            res['failures'].append(f'a commit with no change to the rendered output sent {sent} '
                                   'spec events')
        return res
