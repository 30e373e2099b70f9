#!/usr/bin/env python3
"""Unit tests of the ApplicationSet controller stand-in's pure parts: RollingSync step membership,
the operation it writes, and how an Application moves Waiting -> Pending -> Progressing -> Healthy
(no process, no network)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from appset_controller import (AppSetController, ROLLING_SYNC_REASON, app_step,  # noqa: E402
                               rolling_sync_operation)

STEPS = [{"matchExpressions": [{"key": "cluster", "operator": "In", "values": ["c1"]}]},
         {"matchExpressions": [{"key": "cluster", "operator": "NotIn", "values": ["c1"]}]}]
T0 = "2026-11-26T10:00:00Z"
T1 = "2026-11-26T10:00:05Z"


def app(cluster: str, sync: str = "", health: str = "", phase: str = "", started: str = "",
        operation: bool = False) -> dict:
    status = {}
    if sync:
        status["sync"] = {"status": sync}
    if health:
        status["health"] = {"status": health}
    if phase:
        status["operationState"] = {"phase": phase, "startedAt": started}
    a = {"metadata": {"name": f"{cluster}-app", "labels": {"cluster": cluster}},
         "spec": {"syncPolicy": {"automated": {"prune": True, "enabled": False},
                                 "syncOptions": ["CreateNamespace=true"]}},
         "status": status}
    if operation:
        a["operation"] = {"sync": {}}
    return a


class StepTest(unittest.TestCase):
    def test_an_application_belongs_to_the_first_step_that_selects_it(self):
        self.assertEqual(app_step(app("c1"), STEPS), 0)
        self.assertEqual(app_step(app("c2"), STEPS), 1)

    def test_an_application_no_step_selects_is_in_none(self):
        self.assertIsNone(app_step(app("c2"), STEPS[:1]))


class OperationTest(unittest.TestCase):
    def test_is_the_controllers_sync_with_prune_and_sync_options_of_the_template(self):
        op = rolling_sync_operation(app("c1"))
        self.assertEqual(op["initiatedBy"], {"username": "applicationset-controller", "automated": True})
        self.assertEqual(op["info"], [{"name": "Reason", "value": ROLLING_SYNC_REASON}])
        self.assertEqual(op["sync"], {"prune": True, "syncOptions": ["CreateNamespace=true"]})
        self.assertEqual(op["retry"], {"limit": 5})

    def test_pins_no_revision(self):
        self.assertNotIn("revision", rolling_sync_operation(app("c1"))["sync"])


class ProgressTest(unittest.TestCase):
    def advance(self, entries, a, step, now=T1):
        AppSetController._advance(entries, a["metadata"]["name"], a, step, now)
        return entries[a["metadata"]["name"]]

    def test_a_new_application_waits(self):
        self.assertEqual(self.advance({}, app("c1", "OutOfSync", "Missing"), 0, T0)["status"], "Waiting")

    def test_step_one_starts_with_its_out_of_sync_waiting_applications(self):
        entries = {}
        apps = {a["metadata"]["name"]: a for a in (app("c1", "OutOfSync"), app("c2", "OutOfSync"))}
        for a in apps.values():
            self.advance(entries, a, app_step(a, STEPS), T0)
        self.assertEqual(AppSetController._due(entries, apps, len(STEPS)), ["c1-app"])

    def test_step_two_waits_until_every_application_of_step_one_is_healthy(self):
        entries = {"c1-app": {"status": "Progressing", "step": "1"}, "c2-app": {"status": "Waiting", "step": "2"}}
        apps = {"c1-app": app("c1", "Synced", "Progressing"), "c2-app": app("c2", "OutOfSync")}
        self.assertEqual(AppSetController._due(entries, apps, 2), [])
        entries["c1-app"]["status"] = "Healthy"
        self.assertEqual(AppSetController._due(entries, apps, 2), ["c2-app"])

    def test_an_application_with_an_operation_pending_is_not_synced_twice(self):
        entries = {"c1-app": {"status": "Waiting", "step": "1"}}
        apps = {"c1-app": app("c1", "OutOfSync", operation=True)}
        self.assertEqual(AppSetController._due(entries, apps, 1), [])

    def test_pending_becomes_progressing_once_the_operation_runs(self):
        entries = {"c1-app": {"status": "Pending", "step": "1", "lastTransitionTime": T0}}
        self.assertEqual(self.advance(entries, app("c1", "OutOfSync", "Missing"), 0)["status"], "Pending")
        self.assertEqual(self.advance(entries, app("c1", "OutOfSync", "Missing", "Running", T1), 0)["status"],
                         "Progressing")

    def test_an_earlier_operation_does_not_count_as_this_one(self):
        entries = {"c1-app": {"status": "Pending", "step": "1", "lastTransitionTime": T1}}
        self.assertEqual(self.advance(entries, app("c1", "OutOfSync", "Healthy", "Succeeded", T0), 0)["status"],
                         "Pending")

    def test_progressing_becomes_healthy_when_synced_healthy_and_succeeded(self):
        entries = {"c1-app": {"status": "Progressing", "step": "1", "lastTransitionTime": T0}}
        self.assertEqual(self.advance(entries, app("c1", "Synced", "Progressing", "Succeeded", T0), 0)["status"],
                         "Progressing")
        self.assertEqual(self.advance(entries, app("c1", "Synced", "Healthy", "Succeeded", T0), 0)["status"],
                         "Healthy")

    def test_a_healthy_application_with_a_new_revision_waits_again(self):
        entries = {"c1-app": {"status": "Healthy", "step": "1", "lastTransitionTime": T0}}
        self.assertEqual(self.advance(entries, app("c1", "OutOfSync", "Healthy"), 0)["status"], "Waiting")


if __name__ == "__main__":
    unittest.main(verbosity=2)
