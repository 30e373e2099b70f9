#!/usr/bin/env python3
"""Unit tests of mmi_stack's pure helpers (no process, no network; free_port binds on loopback)."""

import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mmi_stack  # noqa: E402

RENDERED_CONFIGMAP = """---
# Source: multicluster-maestro-integrations/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: mmi-multicluster-maestro-integrations-config
data:
  # Read by `mmi-dispatcher --config`.
  dispatcher.yaml: |
    logLevel: "info"
    transport:
      mqtt:
        brokerHost: 127.0.0.1:1883

        sourceId: app-work-client
      type: mqtt
  # Read by `mmi-status-sink --config`.
  status-sink.yaml: |
    logLevel: "debug"
    status:
      writers: 16
---
kind: Deployment
"""


class ConfigMapBlocksTest(unittest.TestCase):
    def test_takes_every_literal_block_without_its_indent(self):
        blocks = mmi_stack.configmap_data_blocks(RENDERED_CONFIGMAP.split("\n---\nkind: Deployment")[0])
        self.assertEqual(set(blocks), {"dispatcher.yaml", "status-sink.yaml"})
        self.assertEqual(blocks["dispatcher.yaml"],
                         'logLevel: "info"\ntransport:\n  mqtt:\n    brokerHost: 127.0.0.1:1883\n\n'
                         "    sourceId: app-work-client\n  type: mqtt\n")
        self.assertEqual(blocks["status-sink.yaml"], 'logLevel: "debug"\nstatus:\n  writers: 16\n')


class PrometheusTest(unittest.TestCase):
    def test_parses_labels_values_and_skips_comments(self):
        text = ('# HELP x y\n# TYPE mmi_a counter\nmmi_a{action="create",result="ok"} 3\n'
                'mmi_a{action="update",result="ok"} 2 1700000000\nmmi_g 1.5e3\n'
                'mmi_q{msg="a \\"quoted\\" , value"} 7\n')
        m = mmi_stack.parse_prometheus(text)
        self.assertEqual(m["mmi_a"][0], ({"action": "create", "result": "ok"}, 3.0))
        self.assertEqual(m["mmi_g"], [({}, 1500.0)])
        self.assertEqual(m["mmi_q"][0][0]["msg"], 'a "quoted" , value')
        self.assertEqual(mmi_stack.metric_sum(m, "mmi_a"), 5.0)
        self.assertEqual(mmi_stack.metric_sum(m, "mmi_a", action="update"), 2.0)
        self.assertEqual(mmi_stack.metric_sum(m, "missing"), 0.0)


class SelectorTest(unittest.TestCase):
    def test_label_selector_semantics(self):
        labels = {"name": "cluster-0001", "local-cluster": "true"}
        self.assertTrue(mmi_stack.label_selector_matches({}, labels))
        self.assertTrue(mmi_stack.label_selector_matches(None, labels))
        not_local = {"matchExpressions": [{"key": "local-cluster", "operator": "NotIn", "values": ["true"]}]}
        self.assertFalse(mmi_stack.label_selector_matches(not_local, labels))
        self.assertTrue(mmi_stack.label_selector_matches(not_local, {"name": "cluster-0001"}))
        self.assertTrue(mmi_stack.label_selector_matches({"matchLabels": {"name": "cluster-0001"}}, labels))
        self.assertFalse(mmi_stack.label_selector_matches({"matchLabels": {"name": "x"}}, labels))
        exists = {"matchExpressions": [{"key": "vendor", "operator": "Exists"}]}
        self.assertFalse(mmi_stack.label_selector_matches(exists, labels))


class TemplateTest(unittest.TestCase):
    def test_renders_known_params_and_keeps_unknown_ones(self):
        tmpl = {"metadata": {"name": "{{name}}-guestbook", "annotations": {"c": "{{ name }}"}},
                "spec": {"destination": {"server": "{{server}}"}, "list": ["{{clusterName}}", 3, "{{other}}"]}}
        out = mmi_stack.render_fasttemplate(tmpl, {"name": "cluster-0001", "server": "https://s",
                                                   "clusterName": "cluster-0001"})
        self.assertEqual(out["metadata"], {"name": "cluster-0001-guestbook", "annotations": {"c": "cluster-0001"}})
        self.assertEqual(out["spec"], {"destination": {"server": "https://s"},
                                       "list": ["cluster-0001", 3, "{{other}}"]})


class NamesTest(unittest.TestCase):
    def test_cluster_names_match_fleet_sim(self):
        stack = mmi_stack.Stack.__new__(mmi_stack.Stack)
        stack.cfg = mmi_stack.StackConfig(work_dir="/nonexistent", clusters=3)
        self.assertEqual(stack.cluster_names(), ["cluster-0001", "cluster-0002", "cluster-0003"])
        stack.cfg.clusters = 12345
        self.assertEqual(stack.cluster_name(12345), "cluster-12345")


class ResourceIdTest(unittest.TestCase):
    def test_matches_the_dispatchers_ids(self):
        # libs/cloudevents/resource_id_test.cc, the same check value.
        self.assertEqual(mmi_stack.work_resource_id("app-work-client", "cluster1",
                                                    "openshift-gitops-guestbook-cluster1"),
                         "278f3a61-efe5-56de-abba-6aedbfcce272")


class FreePortTest(unittest.TestCase):
    def test_picks_below_the_ephemeral_range_and_never_a_bound_port(self):
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            ephemeral_floor = int(f.read().split()[0])
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", mmi_stack.free_port()))
            taken_port = taken.getsockname()[1]
            picks = {mmi_stack.free_port() for _ in range(200)}
        self.assertNotIn(taken_port, picks)
        if ephemeral_floor > 11000:  # otherwise the kernel picks (see host.py)
            self.assertTrue(all(10000 <= p < ephemeral_floor for p in picks), sorted(picks))
        self.assertGreater(len(picks), 150)  # at random, so that parallel tests rarely meet


if __name__ == "__main__":
    unittest.main()
