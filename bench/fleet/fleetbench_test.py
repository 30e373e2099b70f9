#!/usr/bin/env python3
"""Unit tests of bench/fleet's helpers (no peers): histogram quantiles, counter deltas across a
restart, the upstream ManifestWork and cost model."""

import copy
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fleetbench import baseline, goals, manifests, manifests_goals, prom, restart_probe, scenarios  # noqa: E402

TEXT = '''# HELP mmi_status_lag_seconds lag
# TYPE mmi_status_lag_seconds histogram
mmi_status_lag_seconds_bucket{le="0.1"} 50
mmi_status_lag_seconds_bucket{le="1"} 90
mmi_status_lag_seconds_bucket{le="10"} 100
mmi_status_lag_seconds_bucket{le="+Inf"} 100
mmi_status_lag_seconds_sum 80
mmi_status_lag_seconds_count 100
mmi_status_updates_total{result="ok"} 7
mmi_status_updates_total{result="retry"} 3
apiserver_request_total{code="200",resource="applications",verb="PATCH"} 12
apiserver_request_total{code="409",resource="applications",verb="PATCH"} 1
apiserver_request_total{code="200",resource="leases",verb="PUT"} 4
'''


class PromTest(unittest.TestCase):
    def test_parse_and_totals(self):
        m = prom.parse(TEXT)
        self.assertEqual(prom.total(m, 'mmi_status_updates_total'), 10)
        self.assertEqual(prom.total(m, 'mmi_status_updates_total', {'result': 'ok'}), 7)
        self.assertEqual(prom.by_label(m, 'apiserver_request_total', ('verb', 'resource')),
                         {('PATCH', 'applications'): 13, ('PUT', 'leases'): 4})

    def test_quantiles_interpolate_within_the_bucket(self):
        b = prom.buckets(prom.parse(TEXT), 'mmi_status_lag_seconds')
        self.assertEqual(b[-1], (math.inf, 100))
        self.assertAlmostEqual(prom.quantile(0.5, b), 0.1)
        # rank 99 lies in (1, 10]: 1 + 9 * (99 - 90) / 10
        self.assertAlmostEqual(prom.quantile(0.99, b), 9.1)
        self.assertIsNone(prom.quantile(0.5, [(1.0, 0), (math.inf, 0)]))

    def test_labelled_histograms_are_summed_or_selected(self):
        text = '\n'.join(
            f'mmi_status_lag_seconds_bucket{{write="{w}",le="{le}"}} {c}'
            for w, counts in (('material', (8, 10, 10)), ('volatile', (0, 5, 30)))
            for le, c in zip(('1', '10', '+Inf'), counts)) + '\n'
        m = prom.parse(text)
        self.assertEqual(prom.buckets(m, 'mmi_status_lag_seconds'),
                         [(1.0, 8), (10.0, 15), (math.inf, 40)])
        self.assertEqual(prom.buckets(m, 'mmi_status_lag_seconds', {'write': 'material'}),
                         [(1.0, 8), (10.0, 10), (math.inf, 10)])

    def test_quantile_in_the_inf_bucket_is_a_floor(self):
        b = [(1.0, 10), (math.inf, 100)]
        self.assertEqual(prom.quantile(0.99, b), 1.0)
        self.assertTrue(prom.summary(b)['p99_at_least'])

    def test_deltas_and_counter_reset(self):
        before = prom.parse(TEXT)
        after = prom.parse(TEXT.replace('{result="ok"} 7', '{result="ok"} 19'))
        self.assertEqual(prom.counter_delta(before, after, 'mmi_status_updates_total'), 12)
        restarted = prom.parse('mmi_status_updates_total{result="ok"} 2\n')
        self.assertEqual(prom.counter_delta(before, restarted, 'mmi_status_updates_total'), 2)
        self.assertEqual(prom.delta_by_label(before, restarted, 'mmi_status_updates_total',
                                             ('result',)), {('ok',): 2})
        later = prom.parse(TEXT.replace('le="10"} 100', 'le="10"} 110').replace(
            'le="+Inf"} 100', 'le="+Inf"} 110'))
        d = prom.bucket_delta(before, later, 'mmi_status_lag_seconds')
        self.assertEqual(d, [(0.1, 0), (1.0, 0), (10.0, 10), (math.inf, 10)])
        self.assertEqual(prom.summary(d)['count'], 10)


APP = {
    'apiVersion': 'argoproj.io/v1alpha1', 'kind': 'Application',
    'metadata': {
        'name': 'cluster-0001-appset-000', 'namespace': 'openshift-gitops',
        'uid': 'abcdef12-0000-4000-8000-000000000001',
        'labels': {'apps.open-cluster-management.io/pull-to-ocm-managed-cluster': 'true'},
        'annotations': {
            'apps.open-cluster-management.io/ocm-managed-cluster': 'cluster-0001',
            'apps.open-cluster-management.io/ocm-managed-cluster-app-namespace':
                'openshift-gitops',
            'argocd.argoproj.io/skip-reconcile': 'true'},
        'finalizers': ['resources-finalizer.argocd.argoproj.io'],
        'ownerReferences': [{'apiVersion': 'argoproj.io/v1alpha1', 'kind': 'ApplicationSet',
                             'name': 'appset-000', 'uid': 'u'}]},
    'spec': {'project': 'default',
             'source': {'repoURL': 'https://example/repo.git', 'targetRevision': 'HEAD',
                        'path': 'guestbook'},
             'destination': {'server': 'https://cluster-0001-control-plane',
                             'namespace': 'guestbook'}},
}


class BaselineTest(unittest.TestCase):
    def test_manifestwork_follows_the_basic_controller(self):
        w = baseline.build_manifestwork(APP)
        self.assertEqual(w['metadata']['namespace'], 'cluster-0001')
        self.assertEqual(w['metadata']['name'], 'cluster-0001-appset-000-abcde')
        self.assertEqual(w['metadata']['labels'][baseline.APPSET_LABEL], 'true')
        # sha1("openshift-gitops/appset-000")
        self.assertEqual(len(w['metadata']['labels'][baseline.APPSET_HASH_LABEL]), 40)
        ns, app = w['spec']['workload']['manifests']
        self.assertEqual(ns['kind'], 'Namespace')
        self.assertEqual(app['spec']['destination']['server'], 'https://kubernetes.default.svc')
        self.assertEqual(app['spec']['destination']['name'], '')
        self.assertNotIn(baseline.CLUSTER_ANN, app['metadata']['annotations'])
        self.assertNotIn(baseline.SKIP_ANN, app['metadata']['annotations'])
        self.assertNotIn(baseline.PULL_LABEL, app['metadata']['labels'])
        self.assertEqual(app['metadata']['annotations'][baseline.HOSTING_ANN],
                         'openshift-gitops/appset-000')
        rules = w['spec']['manifestConfigs'][0]['feedbackRules']
        self.assertEqual(len(rules), 5)
        status = baseline.manifestwork_status(w)
        self.assertEqual(len(status['resourceStatus']['manifests']), 2)

    def test_cost_model(self):
        sizes = {'app_get_response': 2000, 'app_stored': 1900, 'work_get_response': 6000,
                 'work_stored': 5900}
        c = baseline.compute(300000, sizes, 120, 180, 3000)
        ss = c['steady_state_per_minute']
        self.assertEqual(c['hub_objects']['total'], 600000)
        self.assertEqual(ss['status_poll_gets'], 1800000)  # 300,000 every 10 s
        self.assertEqual(ss['application_status_updates'], 300000 * 60 / 150 + 3000)
        self.assertEqual(ss['manifestwork_status_updates'], 3000)
        self.assertEqual(ss['bytes']['status_poll_gets'], 1800000 * 2000)
        self.assertEqual(ss['bytes']['total'], 1800000 * 2000 + 123000 * 3 * 2000 +
                         3000 * 3 * 6000)



class RestartProbeTest(unittest.TestCase):
    def test_an_application_arrives_with_its_first_event_carrying_the_new_revision(self):
        w = restart_probe.BrokerWatch(None, ['c1-a1', 'c1-a10'], 'restart-7', subscribe=False)
        w.note('100.5 {"resourceIdentifier":{"name":"c1-a1"},"targetRevision":"old"}\n')
        w.note('101.25 {"resourceIdentifier":{"name":"c1-a10"},"targetRevision":"restart-7"}\n')
        w.note('102.0 {"resourceIdentifier":{"name":"c1-a10"},"targetRevision":"restart-7"}\n')
        w.note('not-a-time {"name":"c1-a1","targetRevision":"restart-7"}\n')
        self.assertEqual(w.arrivals(), {'c1-a10': 101.25})  # c1-a1 is not a prefix match
        w.stop()

    def test_percentiles(self):
        self.assertIsNone(restart_probe.percentile([], 0.5))
        self.assertEqual(restart_probe.percentile([3, 1, 2], 0.5), 2)
        self.assertEqual(restart_probe.percentile(list(range(101)), 0.99), 99)


class GoalsTest(unittest.TestCase):
    REPORT = {
        'meta': {'applications': 300000},
        'scenarios': {
            'a_cold_start': {'dispatch_throughput_per_s': 3100.0,
                             'processes_until_all_published': {
                                 'dispatcher': {'cpu_cores': 0.9, 'cpu_seconds': 90.0}},
                             'dispatcher_peak_rss_mib': 900.0,
                             'peak_rss_mib': {'dispatcher': 850.0}},
            'b_steady_state': {'window': {
                'status_sink': {'events_received': 1000,
                                'hub_writes': {'ok': 100}},
                'processes': {'status-sink': {'cpu_seconds': 0.05}}}},
            'c_restart_no_change': {'dispatcher': {
                'ready_after_start_s': 60.0, 'peak_rss_before_stop_mib': 1100.5,
                'warm_load_s': 12.5, 'decided_before_load': 100,
                'relist': {'cpu_seconds_until_ready': 9.0, 'peak_rss_mib': 700.0},
                'changes_during_restart': {'applications': 100, 'patched': 100, 'arrived': 100,
                                           'dispatcher_ready_when_changed': False,
                                           'to_broker_s': {'p50': 1.0, 'p99': 4.0,
                                                           'max': 4.5}}}}},
        'ours_vs_upstream': {'request_ratio_upstream_over_ours': 300.0},
        'final_processes': {'dispatcher': {'peak_rss_mib': 720.0}},
    }

    def rows(self, report):
        return {r['goal']: r for r in goals.goals(report)}

    def test_each_goal_is_read_from_its_scenario(self):
        rows = self.rows(self.REPORT)
        peak = rows['dispatcher peak RSS (MiB)']
        # the highest of every process's high-water mark, not the first one found
        self.assertEqual(peak['measured'], 1100.5)
        self.assertIs(peak['met'], False)
        self.assertIn('SIGTERM', peak['source'])
        change = rows['Applications changed during a dispatcher restart: PATCH to broker']
        self.assertEqual(change['measured']['max_s'], 4.5)
        self.assertEqual(change['measured']['warm_load_s'], 12.5)
        self.assertEqual(change['measured']['decided_before_load'], 100)
        self.assertIs(change['met'], True)
        cold = rows['cold dispatch in the full bench (Applications/s)']
        self.assertIs(cold['met'], True)
        self.assertEqual(cold['cores_until_all_published'], {'dispatcher': 0.9})
        self.assertIn('cores used until all published', '\n'.join(goals.format_rows([cold])))
        sink = rows['status-sink CPU per status event (us), whole process']
        self.assertEqual(sink['measured']['us_per_event'], 50.0)  # 0.05 s over 1,000 events
        self.assertEqual(sink['measured']['us_per_hub_write'], 500.0)
        self.assertIs(sink['met'], False)
        self.assertIs(rows['hub requests, upstream over ours']['met'], False)

    def test_a_change_that_never_arrived_misses_the_goal(self):
        report = copy.deepcopy(self.REPORT)
        report['scenarios']['c_restart_no_change']['dispatcher'][
            'changes_during_restart']['arrived'] = 99
        change = self.rows(report)[
            'Applications changed during a dispatcher restart: PATCH to broker']
        self.assertIs(change['met'], False)

    def test_a_change_never_patched_misses_the_goal(self):
        report = copy.deepcopy(self.REPORT)
        ch = report['scenarios']['c_restart_no_change']['dispatcher']['changes_during_restart']
        ch['patched'], ch['arrived'] = 90, 90
        change = self.rows(report)[
            'Applications changed during a dispatcher restart: PATCH to broker']
        self.assertIs(change['met'], False)

    def test_goals_are_judged_only_at_full_scale(self):
        report = copy.deepcopy(self.REPORT)
        report['meta']['applications'] = 30000
        rows = goals.goals(report)
        self.assertTrue(all(r['met'] is None for r in rows))
        self.assertIn('not judged', rows[0]['source'])
        self.assertEqual(rows[0]['measured'], 1100.5)  # still printed

    def test_a_sink_without_cpu_is_not_measured(self):
        report = copy.deepcopy(self.REPORT)
        report['scenarios']['b_steady_state']['window']['processes']['status-sink'][
            'cpu_seconds'] = 0.0
        sink = self.rows(report)['status-sink CPU per status event (us), whole process']
        self.assertIsNone(sink['met'])

    def test_a_broken_off_scenario_reads_n_a(self):
        report = copy.deepcopy(self.REPORT)
        report['scenarios']['c_restart_no_change'] = {'failures': ['KeyError: x'],
                                                      'traceback': '...'}
        change = self.rows(report)[
            'Applications changed during a dispatcher restart: PATCH to broker']
        self.assertIsNone(change['met'])

    def test_warm_load_is_read_from_the_store_histogram(self):
        text = ('mmi_store_query_duration_seconds_sum{operation="for_each_resource"} 57.25\n'
                'mmi_store_query_duration_seconds_count{operation="for_each_resource"} 1\n'
                'mmi_store_query_duration_seconds_sum{operation="record"} 9\n')
        self.assertEqual(scenarios.warm_load(prom.parse(text)), (57.2, 1))
        self.assertEqual(scenarios.warm_load(prom.parse('')), (None, 0))

    def test_what_was_not_run_is_not_measured_rather_than_met(self):
        rows = goals.goals({'scenarios': {}})
        self.assertTrue(rows)
        for r in rows:
            self.assertIsNone(r['met'], r['goal'])
        self.assertTrue(all('n/a' in line for line in goals.format_rows(rows)))


def _f_report(applications, **phases):
    f = {'revision_change': {'generate_manifest_calls': 10, 'distinct_render_requests': 10,
                             'renders': {'render_asks': {'hit': 990, 'render': 10}}},
         'cold': {'generate_manifest_calls': 10, 'distinct_render_requests': 10},
         'no_output_change': {'spec_events_published': {}, 'generate_manifest_calls': 10},
         'cold_dispatch_per_s': 50.0, 'bundle_bytes': {'per_cluster_avg': 12000},
         'sink_cpu': {'us_per_event': 20.0}, 'dispatcher_peak_rss_mib': 900.0}
    f.update(phases)
    return {'meta': {'applications': applications},
            'scenarios': {'f_manifest_delivery': f}}


class ManifestScenarioTest(unittest.TestCase):
    def rows(self, report):
        return {r['goal']: r for r in manifests_goals.manifest_goals(report)}

    def test_sources_differ_by_index_and_readme_changes_no_manifest(self):
        one = manifests.source_tree(2, 1)
        self.assertEqual(sorted(one), ['src-000/README.md', 'src-000/configmap.json',
                                       'src-000/deployment.json', 'src-000/service.json',
                                       'src-001/README.md', 'src-001/configmap.json',
                                       'src-001/deployment.json', 'src-001/service.json'])
        self.assertNotEqual(one['src-000/configmap.json'], one['src-001/configmap.json'])
        noted = manifests.source_tree(2, 1, 'edited')
        changed = {k for k in one if one[k] != noted[k]}
        self.assertEqual(changed, {'src-000/README.md', 'src-001/README.md'})
        later = manifests.source_tree(2, 2)
        self.assertIn('src-000/deployment.json', {k for k in one if one[k] != later[k]})

    def test_app_state_needs_synced_healthy_at_the_revision(self):
        def app(sync, health, rev):
            return {'status': {'sync': {'status': sync, 'revision': rev},
                               'health': {'status': health}}}
        cases = [(app('Synced', 'Healthy', 'abc'), (True, True)),
                 (app('Synced', 'Healthy', 'old'), (False, True)),
                 (app('Synced', 'Progressing', 'abc'), (False, True)),
                 (app('OutOfSync', 'Healthy', 'abc'), (False, True)),
                 ({}, (False, False))]
        for a, want in cases:
            self.assertEqual(manifests.app_state(a, 'abc'), want, a)

    def test_renders_and_no_change_are_judged_at_any_size(self):
        rows = self.rows(_f_report(1000))
        self.assertTrue(rows['renders per distinct render request, a commit changing every '
                             'source']['met'])
        self.assertTrue(rows['spec events sent for a commit that changes no rendered output']['met'])
        self.assertIsNone(rows['dispatcher peak RSS (MiB)']['met'])
        self.assertIn('not judged', rows['dispatcher peak RSS (MiB)']['source'])

    def test_extra_renders_and_a_sent_bundle_miss(self):
        rows = self.rows(_f_report(300000, revision_change={
            'generate_manifest_calls': 11, 'distinct_render_requests': 10},
            no_output_change={'spec_events_published': {('ok',): 3.0}},
            dispatcher_peak_rss_mib=1100.0))
        self.assertFalse(rows['renders per distinct render request, a commit changing every '
                              'source']['met'])
        self.assertEqual(rows['spec events sent for a commit that changes no rendered output']
                         ['measured']['spec_events_published'], 3)
        self.assertFalse(rows['spec events sent for a commit that changes no rendered output']['met'])
        self.assertFalse(rows['dispatcher peak RSS (MiB)']['met'])
        self.assertTrue(rows['status-sink CPU per status event (us), whole process']['met'])

    def test_an_empty_report_measures_nothing(self):
        for r in manifests_goals.manifest_goals({}):
            self.assertIsNone(r['met'], r['goal'])


if __name__ == '__main__':
    unittest.main()
