"""The upstream propagation controller's cost for the same fleet: byte sizes measured on this
run's hub, requests computed (baseline.py), and side by side with ours as measured in (b)."""

import json

from . import baseline
from .common import NS, ScenarioFailure, log
from .hub import APPS


class UpstreamMixin:
    """Part of FleetBench: baseline() and ours_vs_upstream()."""

    def baseline(self):
        """Measures the byte sizes the upstream cost model needs on the real hub, then computes."""
        log('baseline: one ManifestWork and one Application GET measured on the hub')
        app_name = f'{self.clusters[0]}-{self.appsets[-1]}'
        status, body = self.hub.request('GET', f'{APPS}/namespaces/{NS}/applications/{app_name}',
                                        resource='applications')
        if status != 200:
            raise ScenarioFailure(f'GET application {app_name}: HTTP {status}')
        app = json.loads(body)
        seeder_key = f'/registry/argoproj.io/applications/{NS}/{app_name}'
        app_stored = self.etcd_value_size(seeder_key)
        work = baseline.build_manifestwork(app)
        ns = work['metadata']['namespace']
        self.hub.request('POST', '/api/v1/namespaces', {'apiVersion': 'v1', 'kind': 'Namespace',
                                                        'metadata': {'name': ns}},
                         resource='namespaces')
        wpath = f'/apis/work.open-cluster-management.io/v1/namespaces/{ns}/manifestworks'
        s, b = self.hub.request('POST', wpath, work, resource='manifestworks')
        if s not in (200, 201, 409):
            raise ScenarioFailure(f'create ManifestWork: HTTP {s}: {b[:300]!r}')
        name = work['metadata']['name']
        created = self.hub.get_json(f'{wpath}/{name}', resource='manifestworks')
        s, b = self.hub.merge_patch(f'{wpath}/{name}/status',
                                    {'status': baseline.manifestwork_status(created)},
                                    resource='manifestworks')
        if s != 200:
            raise ScenarioFailure(f'ManifestWork status: HTTP {s}: {b[:300]!r}')
        s, wbody = self.hub.request('GET', f'{wpath}/{name}', resource='manifestworks')
        work_stored = self.etcd_value_size(
            f'/registry/work.open-cluster-management.io/manifestworks/{ns}/{name}')
        sizes = {'app_get_response': len(body), 'app_stored': app_stored,
                 'work_get_response': len(wbody), 'work_stored': work_stored}
        # Keep the measurement object from confusing anything: delete it again.
        self.hub.request('DELETE', f'{wpath}/{name}', resource='manifestworks')
        out = baseline.compute(self.n_apps, sizes, self.args.refresh_min, self.args.refresh_max,
                               self.changes_per_minute)
        out['measured_sizes_bytes'] = sizes
        out['measured_from'] = {'application': f'{NS}/{app_name} (GET response, etcd value)',
                                'manifestwork': f'{ns}/{name} built from it, created with the '
                                                'agent status, GET response and etcd value'}
        return out

    def ours_vs_upstream(self, base):
        """Side by side: hub cost measured for ours vs computed for upstream (steady state)."""
        out = {'applications': self.n_apps}
        steady = self.report['scenarios'].get('b_steady_state')
        up = base['steady_state_per_minute']
        out['upstream_computed'] = {
            'hub_objects': base['hub_objects']['total'],
            'hub_requests_per_minute': round(up['total_requests']),
            'hub_bytes_per_minute': round(up['bytes']['total'])}
        ours = {'hub_objects': self.n_apps}
        if steady:
            w = steady['window']
            secs = w['seconds']
            ours['hub_requests_per_minute'] = w['hub_requests']['excluding_bench_per_minute']
            ours['hub_bytes_per_minute'] = w['hub_bytes']['per_minute_excluding_bench']
            ours['status_writes_per_minute'] = round(
                w['status_sink']['hub_writes'].get('ok', 0) * 60.0 / secs)
            if ours['hub_requests_per_minute']:
                out['request_ratio_upstream_over_ours'] = round(
                    up['total_requests'] / ours['hub_requests_per_minute'], 1)
            if ours['hub_bytes_per_minute']:
                out['bytes_ratio_upstream_over_ours'] = round(
                    up['bytes']['total'] / ours['hub_bytes_per_minute'], 1)
        out['ours_measured'] = ours
        out['note'] = ('ours: measured in scenario (b) from kube-apiserver apiserver_request_total, '
                       'apiserver_request_body_size_bytes, apiserver_response_sizes (reads) and '
                       'apiserver_watch_events_sizes, excluding the bench\'s own requests; '
                       'upstream: computed (see baseline_upstream_computed.assumptions), with '
                       'byte sizes measured on this hub')
        return out
