"""Setup: the peers, the ManagedClusters and examples, the ApplicationSets, and every generated
Application written straight into etcd in kube-apiserver's storage format."""

import json
import os
import threading
import time
import uuid

from .common import NS, ScenarioFailure, iso_now, log
from .hub import APPS, EtcdSeeder, HubClient, parallel, stored_application

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


class SeedingMixin:
    """Part of FleetBench: setup() and its steps."""

    def appset_object(self, name, index, example):
        obj = json.loads(json.dumps(example))
        obj['metadata'] = {'name': name, 'namespace': NS}
        tmpl = obj['spec']['template']
        tmpl['metadata']['name'] = '{{name}}-' + name
        tmpl['spec']['source']['path'] = f"{tmpl['spec']['source'].get('path', 'app')}-{index:03d}"
        if self.manifest_mode:
            self.manifest_template(tmpl, index)
        return obj

    def setup(self):
        st = self.stack
        t0 = time.monotonic()
        setup = {}
        log(f'starting peers ({self.args.transport}) under {self.args.work_dir}')
        if self.manifest_mode:
            self.start_manifest_peers(setup)  # the hub's repo-server and git, then the rest
        st.start_peers()
        self.hub = HubClient.from_env(st.hub_env)
        setup['broker_tuning'] = self.broker_limits()
        setup['peers_s'] = round(time.monotonic() - t0, 1)
        t = time.monotonic()
        log(f'creating {len(self.clusters)} ManagedClusters and the examples')
        st.create_managed_clusters()
        st.apply_examples()
        setup['clusters_and_examples_s'] = round(time.monotonic() - t, 1)

        self.create_appsets(setup)
        seeder, last = self.seed_etcd(setup)
        self.wait_watch_cache(last, setup)
        setup['etcd_revision_after_seed'] = seeder.max_revision
        setup['total_s'] = round(time.monotonic() - t0, 1)
        log(f"seeded {setup['seed']['applications']} in {setup['seed']['seconds']:.0f} s; watch cache caught up in "
            f"{setup['watch_cache_catch_up_s']} s")
        self.report['setup'] = setup

    def create_appsets(self, setup):
        """ApplicationSets appset-000..: copies of examples/applicationset.yaml, each with its own
        name and source path, created through the API (kubectl converts the YAML; no YAML in
        stdlib)."""
        st = self.stack
        t = time.monotonic()
        example = json.loads(st.kubectl('create', '--dry-run=client', '-o', 'json', '-f',
                                        os.path.join(REPO_ROOT, 'examples', 'applicationset.yaml')))
        items = [self.appset_object(n, i, example) for i, n in enumerate(self.appsets)]
        st.kubectl('apply', '--server-side', '--field-manager=fleet-bench', '-f', '-',
                   input=json.dumps({'apiVersion': 'v1', 'kind': 'List', 'items': items}))
        setup['applicationsets'] = len(items)
        setup['applicationsets_s'] = round(time.monotonic() - t, 1)

    def seed_etcd(self, setup):
        """Every generated Application straight into etcd in kube-apiserver's storage format, the
        last one alone after the others (the highest revision). Returns (seeder, last item)."""
        st = self.stack
        t = time.monotonic()
        log(f'seeding {self.n_apps} Applications into etcd ({self.args.seed_threads} threads)')
        seeder = EtcdSeeder(st.hub_env['ETCD_ENDPOINT'])
        prefix = '/registry/argoproj.io/applications'
        sample = st.generated_application(self.appsets[0], self.clusters[0])
        self.sample_app = sample
        created_ts = iso_now()

        def gen():
            for a in self.appsets:
                for c in self.clusters:
                    yield a, c

        last = (self.appsets[-1], self.clusters[-1])
        progress = {'n': 0}
        lock = threading.Lock()

        def put(item):
            app = st.generated_application(*item)
            app['metadata']['creationTimestamp'] = created_ts
            obj = stored_application(app, str(uuid.uuid4()))
            meta = obj['metadata']
            seeder.put(f"{prefix}/{meta['namespace']}/{meta['name']}",
                       json.dumps(obj, separators=(',', ':')).encode())
            with lock:
                progress['n'] += 1
                if progress['n'] % 20000 == 0:
                    log(f'  seeded {progress["n"]}')

        items_iter = (it for it in gen() if it != last)
        done, failures, errors = parallel(items_iter, put, self.args.seed_threads)
        try:
            put(last)  # alone, after the others: the highest etcd revision
            done += 1
        except Exception as e:  # noqa: BLE001
            failures += 1
            errors.append(str(e))
        seed_s = time.monotonic() - t
        setup['seed'] = {'applications': done, 'failures': failures, 'errors': errors,
                         'seconds': round(seed_s, 1), 'per_second': round(done / seed_s, 1),
                         'stored_json_bytes_one': len(json.dumps(stored_application(
                             sample, str(uuid.uuid4())), separators=(',', ':')))}
        if failures:
            raise ScenarioFailure(f'seeding: {failures} failures, first: {errors[:2]}')
        return seeder, last

    def wait_watch_cache(self, last, setup):
        """Until the API server's watch cache has the last one (resourceVersion=0 lists are served
        from the cache), as bench/kube does."""
        st = self.stack
        t = time.monotonic()
        last_name = st.generated_application(*last)['metadata']['name']
        probe = (f'{APPS}/namespaces/{NS}/applications?resourceVersion=0&'
                 f'fieldSelector=metadata.name%3D{last_name}')
        while True:
            status, body = self.hub.request('GET', probe, resource='applications', verb='LIST')
            if status == 200 and json.loads(body).get('items'):
                break
            if time.monotonic() - t > self.args.timeout:
                raise ScenarioFailure("the API server's watch cache did not catch up with etcd")
            time.sleep(1)
        setup['watch_cache_catch_up_s'] = round(time.monotonic() - t, 1)
