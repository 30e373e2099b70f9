"""Issue #38's goals for scenario (f) next to what the run measured (pure: reads a finished
report). As in goals.py, reported and never asserted. The render and no-change goals hold at any
size, so they are judged at every size; the dispatcher's RSS and the sink's CPU are judged only
at the 300,000 Applications they are set for."""

from .goals import DISPATCHER_RSS_MIB, FULL_SCALE_APPLICATIONS, SINK_CPU_US_PER_EVENT, _row

SCENARIO = 'f_manifest_delivery'


def _renders(phase):
    """(GenerateManifest calls, distinct render requests) of a phase, or (None, None)."""
    if not phase:
        return None, None
    return phase.get('generate_manifest_calls'), phase.get('distinct_render_requests')


def manifest_goals(report):
    """Rows of scenario (f)'s goals (every row n/a for an empty report)."""
    f = report.get('scenarios', {}).get(SCENARIO, {})
    applications = report.get('meta', {}).get('applications')
    full = applications == FULL_SCALE_APPLICATIONS
    not_judged = (f'; not judged: the goal is set for {FULL_SCALE_APPLICATIONS} Applications, '
                  f'this run had {applications}')
    rows = []

    for key, what in (('revision_change', 'a commit changing every source'),
                      ('cold', 'the cold start')):
        calls, distinct = _renders(f.get(key))
        measured = None if calls is None else {
            'generate_manifest_calls': calls, 'distinct_render_requests': distinct,
            'per_distinct_request': round(calls / distinct, 2) if distinct else None,
            'render_asks': (f.get(key) or {}).get('renders', {}).get('render_asks')}
        rows.append(_row(f'renders per distinct render request, {what}', '<= 1', measured,
                         None if calls is None or not distinct else calls <= distinct,
                         f'(f) {key}: the dispatcher\'s GenerateManifest calls '
                         '(mmi_repo_server_requests_total) over the sources x revisions asked'))

    noop = f.get('no_output_change')
    sent = None if not noop else int(sum(noop.get('spec_events_published', {}).values()))
    rows.append(_row('spec events sent for a commit that changes no rendered output', '0',
                     None if noop is None else {
                         'spec_events_published': sent,
                         'spec_events_received_by_agents': noop.get(
                             'spec_events_received_by_agents'),
                         'generate_manifest_calls': noop.get('generate_manifest_calls'),
                         'hub_all_at_revision_s': noop.get('hub_all_at_revision_s')},
                     None if sent is None else sent == 0,
                     '(f) no_output_change: mmi_events_published_total of the dispatcher'))

    rate = f.get('cold_dispatch_per_s')
    rows.append(_row('cold dispatch in manifest delivery (Applications/s until every hub status '
                     'is Synced/Healthy at the revision)', 'reported', rate, None,
                     '(f) cold: Applications / seconds from the dispatcher\'s start, whole stack '
                     'on this machine'))

    rows.append(_row('bundle bytes per cluster', 'reported', f.get('bundle_bytes'), None,
                     '(f) the ManifestBundle payloads in dispatched_resources, summed per '
                     'cluster'))

    sink = f.get('sink_cpu') or {}
    us = sink.get('us_per_event')
    rows.append(_row('status-sink CPU per status event (us), whole process',
                     f'<= {SINK_CPU_US_PER_EVENT} (intake; bench/sink measures it alone)',
                     sink or None, None if us is None or not full else us <= SINK_CPU_US_PER_EVENT,
                     '(f) the sink\'s CPU seconds over its received events, cold start to the '
                     'last commit' + ('' if full else not_judged)))

    peak = f.get('dispatcher_peak_rss_mib')
    rows.append(_row('dispatcher peak RSS (MiB)', f'<= {DISPATCHER_RSS_MIB}', peak,
                     None if peak is None or not full else peak <= DISPATCHER_RSS_MIB,
                     '(f) VmHWM at the end of the scenario' + ('' if full else not_judged)))
    return rows
