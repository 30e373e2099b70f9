"""What the upstream pull-model propagation costs the hub for the same fleet (computed).

Algorithm (../shared/spec/hub-apis.md §5.3-§5.6, stolostron/multicloud-integrations):
- one ManifestWork per Application in the cluster's hub namespace (name <app>-<uid[:5]>), holding
  a Namespace and the rewritten Application, five JSONPaths feedback rules, ServerSideApply with
  ignoreFields, SelectivelyOrphan delete option (§5.4, §5.11);
- the hub Application placeholders stay, so the hub holds 2 objects per Application;
- status gathered by polling: every 10 s one GET per Application (the model of issue 8), and the
  hub Application status replaced when what was read differs; with Argo CD's refresh churn the
  whole status (with reconciledAt) differs after every refresh (§1.4);
- the work agent writes ManifestWork status (feedback values) on the hub when a value changes.

The byte sizes are measured by the caller on the real hub (one ManifestWork built here from one
generated Application and created on the hub; one GET of one hub Application with its status).
"""

import copy
import hashlib
import time

POLL_INTERVAL_S = 10

PULL_LABEL = 'apps.open-cluster-management.io/pull-to-ocm-managed-cluster'
CLUSTER_ANN = 'apps.open-cluster-management.io/ocm-managed-cluster'
APP_NS_ANN = 'apps.open-cluster-management.io/ocm-managed-cluster-app-namespace'
SKIP_ANN = 'argocd.argoproj.io/skip-reconcile'
APPSET_LABEL = 'apps.open-cluster-management.io/application-set'
APPSET_HASH_LABEL = 'apps.open-cluster-management.io/application-set-hash'
HOSTING_ANN = 'apps.open-cluster-management.io/hosting-applicationset'

FEEDBACK = [('healthStatus', '.status.health.status'), ('syncStatus', '.status.sync.status'),
            ('operationStateStartedAt', '.status.operationState.startedAt'),
            ('operationStatePhase', '.status.operationState.phase'),
            ('syncRevision', '.status.sync.revision')]


def _appset_owner(app):
    for ref in app.get('metadata', {}).get('ownerReferences', []) or []:
        if ref.get('apiVersion') == 'argoproj.io/v1alpha1' and \
                ref.get('kind', '').lower() == 'applicationset':
            return ref.get('name')
    return None


def build_manifestwork(app):
    """The basic propagation controller's ManifestWork for one hub Application (§5.3, §5.4)."""
    meta = app['metadata']
    cluster = meta['annotations'][CLUSTER_ANN]
    app_ns = meta['annotations'].get(APP_NS_ANN) or meta.get('namespace') or 'argocd'
    appset = _appset_owner(app)
    appset_key = f"{meta['namespace']}/{appset}" if appset else None

    labels = {k: v for k, v in (meta.get('labels') or {}).items() if k != PULL_LABEL}
    annotations = {k: v for k, v in (meta.get('annotations') or {}).items()
                   if k not in (CLUSTER_ANN, APP_NS_ANN, SKIP_ANN)}
    if appset:
        labels[APPSET_LABEL] = 'true'
        annotations[HOSTING_ANN] = appset_key
    spec = copy.deepcopy(app['spec'])
    spec.setdefault('destination', {})
    spec['destination']['name'] = ''
    spec['destination']['server'] = 'https://kubernetes.default.svc'
    if 'namespace' in spec['destination'] and not spec['destination']['namespace']:
        spec['destination']['namespace'] = app_ns
    payload_meta = {'name': meta['name'], 'namespace': app_ns}
    if meta.get('finalizers'):
        payload_meta['finalizers'] = list(meta['finalizers'])
    if labels:
        payload_meta['labels'] = labels
    if annotations:
        payload_meta['annotations'] = annotations
    payload = {'apiVersion': 'argoproj.io/v1alpha1', 'kind': 'Application',
               'metadata': payload_meta, 'spec': spec}
    if 'operation' in app:
        payload['operation'] = app['operation']

    work_labels = {}
    work_annotations = {'apps.open-cluster-management.io/hub-application-namespace':
                        meta['namespace'],
                        'apps.open-cluster-management.io/hub-application-name': meta['name']}
    if appset:
        work_labels[APPSET_LABEL] = 'true'
        work_labels[APPSET_HASH_LABEL] = hashlib.sha1(appset_key.encode()).hexdigest()
        work_annotations[HOSTING_ANN] = appset_key
    else:
        work_labels[PULL_LABEL] = 'true'
    namespace_manifest = {
        'apiVersion': 'v1', 'kind': 'Namespace',
        'metadata': {'name': app_ns,
                     'annotations': {'argocd.argoproj.io/sync-options': 'Delete=false'},
                     'labels': {'argocd.argoproj.io/managed-by': app_ns}}}
    uid5 = (meta.get('uid') or '00000')[:5]
    return {
        'apiVersion': 'work.open-cluster-management.io/v1',
        'kind': 'ManifestWork',
        'metadata': {'name': f"{meta['name']}-{uid5}", 'namespace': cluster,
                     'labels': work_labels, 'annotations': work_annotations},
        'spec': {
            'workload': {'manifests': [namespace_manifest, payload]},
            'manifestConfigs': [{
                'resourceIdentifier': {'group': 'argoproj.io', 'resource': 'applications',
                                       'namespace': app_ns, 'name': meta['name']},
                'feedbackRules': [{'type': 'JSONPaths', 'jsonPaths': [{'name': n, 'path': p}]}
                                  for n, p in FEEDBACK],
                'updateStrategy': {'type': 'ServerSideApply', 'serverSideApply': {
                    'force': True,
                    'ignoreFields': [{'condition': 'OnSpokeChange', 'jsonPaths': [
                        '.operation',
                        '.metadata.annotations["argocd.argoproj.io/refresh"]']}]}},
            }],
            'deleteOption': {'propagationPolicy': 'SelectivelyOrphan', 'selectivelyOrphans': {
                'orphaningRules': [{'group': '', 'resource': 'namespaces', 'name': app_ns}]}},
        },
    }


def manifestwork_status(work, revision='8f3a2c1d9e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39'):
    """The status a work agent writes for it: work conditions, per-manifest conditions, the five
    feedback values of the Application (maestro-protocol.md §3)."""
    now = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    gen = work.get('metadata', {}).get('generation', 1)

    def cond(t, reason, msg):
        return {'type': t, 'status': 'True', 'reason': reason, 'message': msg,
                'lastTransitionTime': now, 'observedGeneration': gen}

    manifests = []
    for i, m in enumerate(work['spec']['workload']['manifests']):
        group, _, version = m['apiVersion'].rpartition('/')
        entry = {
            'resourceMeta': {'ordinal': i, 'group': group, 'version': version, 'kind': m['kind'],
                             'resource': 'namespaces' if m['kind'] == 'Namespace'
                             else 'applications',
                             'name': m['metadata']['name'],
                             'namespace': '' if m['kind'] == 'Namespace'
                             else m['metadata']['namespace']},
            'conditions': [cond('Applied', 'AppliedManifestComplete', 'Apply manifest complete'),
                           cond('Available', 'ResourceAvailable', 'Resource is available'),
                           cond('StatusFeedbackSynced', 'StatusFeedbackSynced', '')],
            'statusFeedback': {},
        }
        if m['kind'] == 'Application':
            values = {'healthStatus': 'Healthy', 'syncStatus': 'Synced', 'syncRevision': revision}
            entry['statusFeedback'] = {'values': [
                {'name': k, 'fieldValue': {'type': 'String', 'string': v}}
                for k, v in values.items()]}
        manifests.append(entry)
    return {'conditions': [cond('Applied', 'AppliedManifestWorkComplete',
                                'Apply manifest work complete'),
                           cond('Available', 'ResourcesAvailable', 'All resources are available')],
            'resourceStatus': {'manifests': manifests}}


def compute(applications, sizes, refresh_min_s, refresh_max_s, changes_per_minute):
    """Upstream hub cost for `applications` Applications in steady state (computed).

    sizes: measured bytes: app_get_response (one GET of a hub Application with its status),
    app_stored (its etcd value), work_stored (one ManifestWork with status, etcd value),
    work_get_response (GET of that ManifestWork).
    """
    n = applications
    refresh_mean = (refresh_min_s + refresh_max_s) / 2.0
    polls_per_min = n * 60.0 / POLL_INTERVAL_S
    # The polled whole status differs after every Argo CD refresh (reconciledAt) and on every real
    # change; the hub Application is then updated (PUT of the whole object, response = object).
    status_updates_per_min = n * 60.0 / refresh_mean + changes_per_minute
    # The five feedback values change only on real changes: the agent updates the ManifestWork.
    work_status_updates_per_min = float(changes_per_minute)
    get_b = sizes['app_get_response']
    work_b = sizes['work_get_response']
    out = {
        'applications': n,
        'hub_objects': {'applications': n, 'manifestworks': n, 'total': 2 * n},
        'hub_etcd_bytes': {
            'applications': n * sizes['app_stored'],
            'manifestworks': n * sizes['work_stored'],
            'total': n * (sizes['app_stored'] + sizes['work_stored'])},
        'steady_state_per_minute': {
            'status_poll_gets': polls_per_min,
            'application_status_updates': status_updates_per_min,
            'manifestwork_status_updates': work_status_updates_per_min,
            'total_requests': polls_per_min + status_updates_per_min +
            work_status_updates_per_min,
            'bytes': {
                'status_poll_gets': polls_per_min * get_b,
                # request body + response of each update, plus the watch event that update
                # sends to the controller's informer (one watcher, as ours has one dispatcher)
                'application_status_updates': status_updates_per_min * 3 * get_b,
                'manifestwork_status_updates': work_status_updates_per_min * 3 * work_b,
            },
        },
        'cold_start_requests': {'application_creates': n, 'manifestwork_creates': n,
                                'manifestwork_gets_before_create': n},
        'assumptions': [
            f'status polled every {POLL_INTERVAL_S} s with one GET per Application',
            f'Argo CD refresh every {refresh_min_s}-{refresh_max_s} s (mean {refresh_mean:.0f} s) '
            'changes reconciledAt, so each refresh makes the polled status differ and the hub '
            'Application is updated (request body, response and the watch event to the '
            "controller's informer: each ~ one Application with status)",
            'feedback values (health, sync, revision, operation phase/start) change only on the '
            'real changes; each such change is one ManifestWork status update by the agent',
            'byte sizes are measured on the hub (JSON); HTTP headers and TLS framing excluded',
        ],
    }
    b = out['steady_state_per_minute']['bytes']
    b['total'] = sum(b.values())
    return out
