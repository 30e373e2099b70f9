"""Issue #21's goals next to what this run measured (pure: reads a finished report).

Each row names the goal, its target, the measured value and where it comes from. A goal the run
could not measure (its scenario skipped or broken off) says so instead of passing, and the goals
are judged only at the full 300,000 they are set for (at other sizes the figures are printed,
`met` is None). Timings here are reported, never asserted: the bench's pass/fail checks stay in
the scenarios.
"""

DISPATCHER_RSS_MIB = 1024
RESTART_CHANGE_S = 10
COLD_DISPATCH_PER_S = 3000
SINK_CPU_US_PER_EVENT = 25
REQUEST_RATIO_RUN6 = 406.0
FULL_SCALE_APPLICATIONS = 300000
OURS_OVER_MAESTRO = 0.25  # issue #40: our CPU at a quarter of Maestro's or less


def _row(goal, target, measured, met, source):
    return {'goal': goal, 'target': target, 'measured': measured,
            'met': met, 'source': source}


def _dispatcher_peak(report):
    """The most RSS any dispatcher process of the run had (VmHWM where read), with its source."""
    sc = report.get('scenarios', {})
    found = []
    a = sc.get('a_cold_start', {})
    if a.get('dispatcher_peak_rss_mib') is not None:
        found.append((a['dispatcher_peak_rss_mib'], '(a) VmHWM after the cold start'))
    elif a.get('peak_rss_mib', {}).get('dispatcher') is not None:
        found.append((a['peak_rss_mib']['dispatcher'], '(a) sampled RSS'))
    c = sc.get('c_restart_no_change', {}).get('dispatcher', {})
    if c.get('peak_rss_before_stop_mib') is not None:
        found.append((c['peak_rss_before_stop_mib'], 'first process VmHWM at its SIGTERM in (c)'))
    if c.get('relist', {}).get('peak_rss_mib') is not None:
        found.append((c['relist']['peak_rss_mib'], 'restarted process VmHWM once settled in (c)'))
    final = report.get('final_processes', {}).get('dispatcher', {})
    if final.get('peak_rss_mib') is not None:
        found.append((final['peak_rss_mib'], 'restarted process VmHWM at the end of the run'))
    if not found:
        return None, 'not measured'
    return max(found)


def goals(report):
    """Rows of the issue's goals with this run's figures (every row n/a for an empty report)."""
    rows = _rows(report)
    applications = report.get('meta', {}).get('applications')
    if applications != FULL_SCALE_APPLICATIONS:
        for r in rows:
            r['met'] = None
            r['source'] += (f'; not judged: the goals are set for {FULL_SCALE_APPLICATIONS} '
                            f'Applications, this run had {applications}')
    return rows


def _rows(report):
    sc = report.get('scenarios', {})
    rows = []

    peak, source = _dispatcher_peak(report)
    rows.append(_row('dispatcher peak RSS (MiB)', f'<= {DISPATCHER_RSS_MIB}', peak,
                     None if peak is None else peak <= DISPATCHER_RSS_MIB, source))

    c = sc.get('c_restart_no_change', {}).get('dispatcher', {})
    ch = c.get('changes_during_restart', {})
    worst = ch.get('to_broker_s', {}).get('max')
    if ch:
        measured = {'p50_s': ch.get('to_broker_s', {}).get('p50'),
                    'p99_s': ch.get('to_broker_s', {}).get('p99'), 'max_s': worst,
                    'arrived': ch.get('arrived'), 'of': ch.get('patched'),
                    'changed_after_start_s': ch.get('changed_after_start_s'),
                    'list_complete_when_changed': ch.get('dispatcher_ready_when_changed'),
                    # the load of the dispatch state, and the changes decided while it ran
                    'warm_load_s': c.get('warm_load_s'),
                    'decided_before_load': c.get('decided_before_load')}
        # every one changed and every one arrived: a PATCH that failed is a miss, not a pass
        met = (worst is not None and worst <= RESTART_CHANGE_S and not ch.get('failures')
               and ch.get('arrived') == ch.get('patched') == ch.get('applications'))
    else:
        measured, met = None, None
    rows.append(_row('Applications changed during a dispatcher restart: PATCH to broker',
                     f'every one <= {RESTART_CHANGE_S} s', measured, met,
                     '(c) changes_during_restart'))
    relist = c.get('relist', {})
    rows.append(_row('restarted dispatcher until its list is complete', 'reported',
                     None if not relist else {
                         'ready_after_start_s': c.get('ready_after_start_s'),
                         'cpu_seconds': relist.get('cpu_seconds_until_ready'),
                         'peak_rss_mib': relist.get('peak_rss_mib')},
                     None, '(c) relist'))

    a = sc.get('a_cold_start', {})
    rate = a.get('dispatch_throughput_per_s')
    row = _row('cold dispatch in the full bench (Applications/s)',
               f'>= {COLD_DISPATCH_PER_S}', rate,
               None if rate is None else rate >= COLD_DISPATCH_PER_S,
               '(a) Applications / seconds until all published, whole stack on this machine')
    cores = a.get('processes_until_all_published')
    if cores:
        # what else had the machine's cores meanwhile
        row['cores_until_all_published'] = {k: v['cpu_cores'] for k, v in cores.items()}
    rows.append(row)

    if a.get('maestro'):
        rows.extend(_grpc_rows(report, a['maestro']))

    b = sc.get('b_steady_state', {}).get('window', {})
    received = b.get('status_sink', {}).get('events_received', 0) if b else 0
    if isinstance(received, dict):  # by transport in some reports
        received = sum(received.values())
    cpu = b.get('processes', {}).get('status-sink', {}).get('cpu_seconds') if b else None
    measured, met = None, None
    source = '(b) not run, or no status event in it'
    if received and cpu:
        writes = b['status_sink'].get('hub_writes', {}).get('ok', 0)
        measured = {'us_per_event': round(cpu / received * 1e6, 1), 'events': received,
                    'cpu_seconds': cpu, 'hub_writes': writes,
                    'us_per_hub_write': round(cpu / writes * 1e6, 1) if writes else None}
        met = measured['us_per_event'] <= SINK_CPU_US_PER_EVENT
        source = ('(b) the sink\'s CPU seconds over its received events: intake, coalescing, '
                  'persisting and the hub writes together')
    rows.append(_row('status-sink CPU per status event (us), whole process',
                     f'<= {SINK_CPU_US_PER_EVENT} (intake; bench/sink measures it alone)',
                     measured, met, source))

    ratio = report.get('ours_vs_upstream', {}).get('request_ratio_upstream_over_ours')
    rows.append(_row('hub requests, upstream over ours', f'keep run 6\'s {REQUEST_RATIO_RUN6}x',
                     ratio, None if ratio is None else ratio >= REQUEST_RATIO_RUN6 * 0.9,
                     'ours measured in (b), upstream computed (within 10 % counts as kept)'))
    return rows


def _grpc_rows(report, m):
    """Issue #40 item 5 (scenario (a) over gRPC): our CPU at a quarter of Maestro's or less,
    and the cold dispatch rate against MQTT's in the same invocation (reported)."""
    cost = m.get('cost', {})
    ratio = cost.get('ours_over_maestro')
    rows = [_row('gRPC: our CPU (dispatcher + sink) over Maestro\'s (process + its PostgreSQL '
                 'share)', f'<= {OURS_OVER_MAESTRO}', {
                     'ratio': ratio, 'ours_us_per_application': cost.get('ours_us_per_application'),
                     'maestro_us_per_application': cost.get('maestro_us_per_application'),
                     'process_only_ratio': cost.get('ours_over_maestro_process_only')},
                 None if ratio is None else ratio <= OURS_OVER_MAESTRO,
                 '(a) from the dispatcher start until every status is on the hub')]
    cmp = (report.get('compare_mqtt') or {}).get('rates') or {}
    rows.append(_row('gRPC cold dispatch over MQTT\'s, same invocation', 'reported',
                     cmp.get('grpc_over_mqtt') or None, None,
                     '--compare-mqtt: (a) over MQTT then over gRPC' if cmp else
                     'not measured (run with --compare-mqtt)'))
    return rows


def format_rows(rows):
    """The rows as printed lines."""
    out = []
    for r in rows:
        verdict = {True: 'met', False: 'MISSED', None: 'n/a'}[r['met']]
        out.append(f"  [{verdict}] {r['goal']}: {r['measured']} (goal {r['target']}; "
                   f"{r['source']})")
        if r.get('cores_until_all_published'):
            out.append(f"      cores used until all published: {r['cores_until_all_published']}")
    return out
