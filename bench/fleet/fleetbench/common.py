"""What every part of the fleet bench shares: the fleet's names, the log line, units, the failure
type of a scenario."""

import time

NS = 'openshift-gitops'  # the ApplicationSets' and Applications' namespace (examples/)
APPSET_PREFIX = 'appset-'
SCENARIOS = ('a', 'b', 'c', 'd', 'e', 'f')
SCENARIO_NAMES = {'a': 'cold_start', 'b': 'steady_state', 'c': 'restart_no_change',
                  'd': 'appset_change', 'e': 'dispatcher_cpu_under_status_writes',
                  'f': 'manifest_delivery'}
SERVICES = ('dispatcher', 'status-sink', 'fleet-sim')
PEERS = ('kube-apiserver', 'etcd', 'postgres', 'broker', 'maestro')  # maestro: grpc only


def log(msg):
    print(f'[{time.strftime("%H:%M:%S")}] {msg}', flush=True)


def iso_now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def mib(b):
    return round(b / 1048576.0, 1)


class ScenarioFailure(Exception):
    pass
