"""Pure decisions of the controllers the stack stands in for: the placement controller's
(which clusters a Placement selects) and the ApplicationSet controller's (the Application it
generates). No I/O: the Stack feeds them what it read from the hub."""

from __future__ import annotations

import re
import uuid
from typing import Any

from .config import CLUSTERSET_LABEL, DECISIONS_PER_OBJECT


def label_selector_matches(selector: dict | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics (empty selector = everything)."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


_TEMPLATE_RE = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


def render_fasttemplate(value: Any, params: dict[str, str]) -> Any:
    """The ApplicationSet controller's default (non-goTemplate) rendering: every string in the
    template has `{{param}}` replaced; unknown params stay as they are."""
    if isinstance(value, str):
        return _TEMPLATE_RE.sub(lambda m: params.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [render_fasttemplate(v, params) for v in value]
    if isinstance(value, dict):
        return {render_fasttemplate(k, params): render_fasttemplate(v, params) for k, v in value.items()}
    return value


def _in_cluster_set(labels: dict[str, str], set_name: str, sets: dict[str, dict]) -> bool:
    """A ManagedCluster with `labels` belongs to ManagedClusterSet `set_name`: by the set's label
    selector, or (an exclusive set) by the clusterset label."""
    sel = ((sets.get(set_name) or {}).get("spec") or {}).get("clusterSelector") or {}
    if sel.get("selectorType") == "LabelSelector":
        return label_selector_matches(sel.get("labelSelector"), labels)
    return set_name in sets and labels.get(CLUSTERSET_LABEL) == set_name


def placement_selection(placement: dict, clusters: list[dict], sets: dict[str, dict],
                        bound: set[str]) -> list[str]:
    """The cluster names the placement controller decides for `placement`: members of the cluster
    sets it names (all bound ones when it names none) that are bound to its namespace, matching
    any of its predicates, sorted, cut at numberOfClusters."""
    spec = placement["spec"]
    wanted = set(spec.get("clusterSets") or bound) & bound
    predicates = spec.get("predicates") or [{}]
    chosen = []
    for mc in clusters:
        labels = mc["metadata"].get("labels") or {}
        if not any(_in_cluster_set(labels, sname, sets) for sname in wanted):
            continue
        if any(label_selector_matches(((pr.get("requiredClusterSelector") or {}).get("labelSelector")),
                                      labels) for pr in predicates):
            chosen.append(mc["metadata"]["name"])
    chosen.sort()
    n = spec.get("numberOfClusters")
    if n is not None:
        chosen = chosen[: int(n)]
    return chosen


def decision_pages(chosen: list[str]) -> list[list[str]]:
    """The decisions as OCM pages them over PlacementDecision objects (one empty page at least)."""
    return [chosen[i:i + DECISIONS_PER_OBJECT] for i in range(0, len(chosen), DECISIONS_PER_OBJECT)] or [[]]


def render_application(appset: dict, cluster: str, server: str, namespace: str,
                       generator: dict | None = None) -> dict:
    """The Application the ApplicationSet controller generates from `appset` for `cluster` (whose
    Argo CD cluster secret names `server`): template rendered with the clusterDecisionResource
    params (name, server, clusterName, reason, and `values.<k>` of `generator`, or of every
    generator when none is named), owner reference to the ApplicationSet, the resources finalizer
    when the template names none."""
    spec = appset.get("spec") or {}
    params = {"name": cluster, "server": server, "clusterName": cluster, "reason": ""}
    for gen in [generator] if generator is not None else spec.get("generators") or []:
        for k, v in ((gen.get("clusterDecisionResource") or {}).get("values") or {}).items():
            params[f"values.{k}"] = str(v)
    tmpl = render_fasttemplate(spec.get("template") or {}, params)
    tmeta = tmpl.get("metadata") or {}
    meta: dict[str, Any] = {"name": tmeta.get("name") or f"{cluster}-{appset['metadata']['name']}",
                            "namespace": tmeta.get("namespace") or namespace}
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    finalizers = list(tmeta.get("finalizers") or [])
    preserve = ((spec.get("syncPolicy") or {}).get("preserveResourcesOnDeletion")) is True
    if not finalizers and not preserve:
        finalizers = ["resources-finalizer.argocd.argoproj.io"]
    if finalizers:
        meta["finalizers"] = finalizers
    meta["ownerReferences"] = [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                "name": appset["metadata"]["name"], "uid": appset["metadata"]["uid"],
                                "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta,
            "spec": tmpl.get("spec") or {}}


def work_resource_id(source_id: str, cluster: str, work_name: str) -> str:
    """The Maestro resource id of a work, as the dispatcher computes it
    (libs/cloudevents/resource_id.h WorkResourceId): UUIDv5 in the OID namespace of
    `<source>-manifestworks.work.open-cluster-management.io-<cluster>-<work name>`; the dispatcher's
    work name is `<hub namespace>-<hub name>`."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID,
                          f"{source_id}-manifestworks.work.open-cluster-management.io-{cluster}-{work_name}"))
