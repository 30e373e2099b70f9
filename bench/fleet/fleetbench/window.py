"""Everything a scenario reports about the interval between two snapshots (FleetBench.snapshot):
hub requests and bytes, broker messages, the services' counters and histograms, CPU and RSS.
Pure: snapshots in, the report's `window` dict out."""

from . import prom
from .common import PEERS, SERVICES, mib


class _Deltas:
    """Counter and histogram increases of one process over the window. A process in `restarted`
    ({name: snapshot taken just before it was stopped}) restarted its counters at zero, so its
    increase is (at stop - before) + after."""

    def __init__(self, before, after, restarted):
        self.before, self.after, self.restarted = before, after, restarted

    @staticmethod
    def _m(snap, name):
        return snap['metrics'].get(name, {})

    def counter(self, proc, metric, where=None):
        m, b, a = self._m, self.before, self.after
        if proc in self.restarted:
            return (prom.counter_delta(m(b, proc), m(self.restarted[proc], proc), metric, where)
                    + prom.total(m(a, proc), metric, where))
        return prom.counter_delta(m(b, proc), m(a, proc), metric, where)

    def by_label(self, proc, metric, keys, where=None):
        m, b, a = self._m, self.before, self.after
        d = prom.delta_by_label(m(b, proc), m(a, proc), metric, keys, where)
        if proc in self.restarted:
            d = prom.delta_by_label(m(b, proc), m(self.restarted[proc], proc), metric, keys, where)
            for k, v in prom.by_label(m(a, proc), metric, keys, where).items():
                d[k] = d.get(k, 0.0) + v
        return {'/'.join(k): int(v) for k, v in sorted(d.items()) if v}

    def hist(self, proc, metric, where=None):
        m, b, a = self._m, self.before, self.after
        if proc in self.restarted:
            # Histogram of the new process only (the old one's observations are lost in the
            # merge: bucket bounds are equal, so add them).
            old = dict(prom.bucket_delta(m(b, proc), m(self.restarted[proc], proc), metric, where))
            new = prom.buckets(m(a, proc), metric, where)
            merged = [(le, c + old.get(le, 0.0)) for le, c in new] if new else sorted(old.items())
            return prom.summary(merged)
        return prom.summary(prom.bucket_delta(m(b, proc), m(a, proc), metric, where))

    def hub(self, metric, keys):
        return prom.delta_by_label(self._m(self.before, 'kube-apiserver'),
                                   self._m(self.after, 'kube-apiserver'), metric, keys)


def hub_requests(d, secs):
    """Hub API requests by verb and resource (kube-apiserver's own counters), minus the bench's."""
    before, after = d.before, d.after
    api = d.hub('apiserver_request_total', ('verb', 'resource'))
    own = {}
    for k, v in after['own'].items():
        delta = v - before['own'].get(k, 0)
        if delta:
            own[k] = delta
    by_verb, services_by_verb = {}, {}
    for (verb, resource), v in sorted(api.items()):
        key = f'{verb} {resource or "-"}'
        by_verb[key] = int(v)
        svc = v - own.get((verb, resource), 0)
        if svc > 0:
            services_by_verb[key] = int(svc)
    # Skip the apiserver's own bookkeeping of scraping itself (GET on /metrics: resource "").
    return {
        'all_by_verb_resource': by_verb,
        'bench_own_by_verb_resource': {f'{k[0]} {k[1] or "-"}': v for k, v in own.items()},
        'excluding_bench_by_verb_resource': services_by_verb,
        'excluding_bench_total': int(sum(services_by_verb.values())),
        'excluding_bench_per_minute': round(sum(services_by_verb.values()) * 60.0 / secs, 1),
    }


def hub_bytes(d, secs):
    """Hub bytes (kube-apiserver's histograms): request bodies (writes), response bodies of reads
    (GET/LIST; kube-apiserver does not measure write responses) and watch events sent."""
    def sizes(metric, keys):
        return {' '.join(x or '-' for x in k): int(v) for k, v in sorted(d.hub(metric, keys).items()) if v}

    own_bytes = {k: d.after['own_bytes'].get(k, 0) - d.before['own_bytes'].get(k, 0)
                 for k in ('request_body', 'response_body')}
    hb = {'request_body_by_verb_resource': sizes('apiserver_request_body_size_bytes_sum',
                                                 ('verb', 'resource')),
          'read_response_by_verb_resource': sizes('apiserver_response_sizes_sum',
                                                  ('verb', 'resource')),
          'watch_events_by_kind': sizes('apiserver_watch_events_sizes_sum',
                                        ('kind', 'resource')),
          'bench_own': own_bytes}
    hb['total_excluding_bench'] = max(0, int(
        sum(hb['request_body_by_verb_resource'].values()) +
        sum(hb['read_response_by_verb_resource'].values()) +
        sum(hb['watch_events_by_kind'].values()) - own_bytes['request_body'] -
        own_bytes['response_body']))
    hb['per_minute_excluding_bench'] = round(hb['total_excluding_bench'] * 60.0 / secs)
    return hb


def broker_messages(d):
    return {
        'fleet_sim_specs_received': d.by_label('fleet-sim', 'mmi_fleet_sim_specs_received_total',
                                               ('action',)),
        'fleet_sim_statuses_sent': d.by_label('fleet-sim', 'mmi_fleet_sim_statuses_sent_total',
                                              ('reason',)),
        'fleet_sim_spec_resyncs_sent': int(d.counter('fleet-sim',
                                                     'mmi_fleet_sim_spec_resyncs_sent_total')),
        'fleet_sim_status_resyncs_answered': int(
            d.counter('fleet-sim', 'mmi_fleet_sim_status_resyncs_answered_total')),
        # Statuses the simulated agents lost: publishes the broker did not acknowledge (not
        # retried by fleet-sim) and received events dropped on a full intake queue.
        'fleet_sim_publish_failures': int(d.counter('fleet-sim',
                                                    'mmi_fleet_sim_publish_failures_total')),
        'fleet_sim_intake_dropped': int(d.counter('fleet-sim',
                                                  'mmi_fleet_sim_intake_dropped_total')),
        'dispatcher_published': d.by_label('dispatcher', 'mmi_events_published_total',
                                           ('result',)),
        'dispatcher_received': int(d.counter('dispatcher', 'mmi_events_received_total')),
        'status_sink_published': d.by_label('status-sink', 'mmi_events_published_total',
                                            ('result',)),
        'status_sink_received': int(d.counter('status-sink', 'mmi_events_received_total')),
    }


def dispatcher_figures(d):
    return {
        'dispatches': d.by_label('dispatcher', 'mmi_dispatcher_dispatches_total',
                                 ('action', 'result')),
        'decisions': d.by_label('dispatcher', 'mmi_dispatcher_decisions_total', ('decision',)),
        'hub_writes': d.by_label('dispatcher', 'mmi_dispatcher_hub_writes_total',
                                 ('operation', 'result')),
        'spec_resync_requests': d.by_label('dispatcher',
                                           'mmi_dispatcher_spec_resync_requests_total',
                                           ('result',)),
        'publish_latency': d.hist('dispatcher', 'mmi_dispatcher_publish_latency_seconds'),
    }


def status_sink_figures(d, secs):
    sink_writes = d.by_label('status-sink', 'mmi_status_updates_total', ('result',))
    return {
        'events_received': int(d.counter('status-sink', 'mmi_status_events_received_total')),
        'events_dropped': d.by_label('status-sink', 'mmi_status_events_dropped_total',
                                     ('reason',)),
        'events_coalesced': int(d.counter('status-sink', 'mmi_status_events_coalesced_total')),
        'hub_writes': sink_writes,
        'hub_writes_per_second': round(sink_writes.get('ok', 0) / secs, 1),
        'resync_requests': d.by_label('status-sink', 'mmi_status_resync_requests_total',
                                      ('result',)),
        'lag': d.hist('status-sink', 'mmi_status_lag_seconds'),
        # material: a sync/health/... change; volatile: reconciledAt-only, throttled
        'lag_material': d.hist('status-sink', 'mmi_status_lag_seconds', {'write': 'material'}),
        'lag_volatile': d.hist('status-sink', 'mmi_status_lag_seconds', {'write': 'volatile'}),
        'write_duration': d.hist('status-sink', 'mmi_status_write_duration_seconds'),
    }


def process_figures(before, after, restarted, secs):
    """CPU (cores used over the window) and RSS per process."""
    procs = {}
    for name in SERVICES + PEERS:
        a = after['procs'].get(name)
        b = before['procs'].get(name)
        if a is None:
            continue
        cpu = a['cpu_seconds'] - (b['cpu_seconds'] if b else 0.0)
        if name in restarted and name in restarted[name]['procs']:
            stop = restarted[name]['procs'][name]
            cpu = stop['cpu_seconds'] - (b['cpu_seconds'] if b else 0.0) + a['cpu_seconds']
        elif cpu < 0:  # restarted without a stop snapshot, or a backend exited
            cpu = a['cpu_seconds']
        procs[name] = {'cpu_seconds': round(cpu, 2), 'cpu_cores': round(cpu / secs, 3),
                       'rss_mib': mib(a['rss_bytes'])}
    return procs


def window(before, after, restarted=None):
    """The report of the interval between two snapshots.

    restarted: {process name: snapshot taken just before it was stopped}; its counters and
    CPU restarted at zero, so the window's increase is (at stop - before) + after.
    """
    restarted = restarted or {}
    secs = max(1e-9, after['t'] - before['t'])
    d = _Deltas(before, after, restarted)
    return {
        'seconds': round(secs, 1),
        'hub_requests': hub_requests(d, secs),
        'hub_bytes': hub_bytes(d, secs),
        'hub_watch_events_by_kind': d.by_label('kube-apiserver', 'apiserver_watch_events_total',
                                               ('kind', 'resource')),
        'broker_messages': broker_messages(d),
        'dispatcher': dispatcher_figures(d),
        'status_sink': status_sink_figures(d, secs),
        'processes': process_figures(before, after, restarted, secs),
    }
