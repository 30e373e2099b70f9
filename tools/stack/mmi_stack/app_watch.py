"""Watching hub objects from the tests: a list + watch thread per collection, and AppWatch, which
records every hub state of the Applications and ApplicationSets of one namespace as Argo CD's real
ApplicationSet controller and the status sink write them (the tests read the timeline)."""

from __future__ import annotations

import copy
import http.client
import json
import threading
import time
from typing import Any, Callable

from .config import APP_API, ARGO_NAMESPACE, StackError


class Watch(threading.Thread):
    """List + watch of one collection: `on_event(type, object)` for every object of the list (type
    "LISTED") and every watch event; lists again after a 410 or an error, until stopped."""

    def __init__(self, hub, path: str, on_event: Callable[[str, dict], None], stop: threading.Event):
        super().__init__(daemon=True, name=f"watch {path}")
        self.hub, self.path, self.on_event, self.stop_event = hub, path, on_event, stop
        self.synced = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                body = self.hub.request("GET", self.path)
                for obj in body.get("items") or []:
                    self.on_event("LISTED", obj)
                self.synced.set()
                self._watch(body["metadata"]["resourceVersion"])
            except (OSError, http.client.HTTPException, StackError, ValueError, KeyError) as e:
                self.error = f"{type(e).__name__}: {e}"
                self.stop_event.wait(0.5)

    def _watch(self, rv: str) -> None:
        while not self.stop_event.is_set():
            conn = http.client.HTTPSConnection(self.hub.host, self.hub.port, context=self.hub.ctx, timeout=5)
            sep = "&" if "?" in self.path else "?"
            conn.request("GET", f"{self.path}{sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=300"
                                f"&resourceVersion={rv}", headers={"Accept": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise StackError(f"watch {self.path}: HTTP {resp.status}")
            try:
                while not self.stop_event.is_set():
                    try:
                        line = resp.readline()
                    except TimeoutError:
                        continue  # nothing happened for 5 s; look at the stop flag
                    if not line:
                        break  # the server ended the watch: resume from rv
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        return  # 410 Gone and friends: list again
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if event.get("type") != "BOOKMARK":
                        self.on_event(event["type"], obj)
            finally:
                conn.close()


def app_view(app: dict) -> tuple[str, str, str]:
    """(sync status, health status, operationState phase) of an Application, "" where absent."""
    st = app.get("status") or {}
    return ((st.get("sync") or {}).get("status") or "", (st.get("health") or {}).get("status") or "",
            (st.get("operationState") or {}).get("phase") or "")


class AppWatch:
    """Every hub state of the Applications and ApplicationSets of `namespace`, as watched:
      * timeline: (t, app, sync, health, operation phase) each time that view changes;
      * events: (t, what, app) for "created", "deleted", "operation" (an `operation` appeared on
        the Application: who writes it on the hub is Argo CD's ApplicationSet controller or a user)
        and "operation-removed";
      * app(name), applicationset(name): the latest objects.
    Use as a context manager; times are time.monotonic()."""

    def __init__(self, stack, namespace: str = ARGO_NAMESPACE):
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._apps: dict[str, dict] = {}
        self._appsets: dict[str, dict] = {}
        self._views: dict[str, tuple[str, str, str]] = {}
        self.timeline: list[tuple[float, str, str, str, str]] = []
        self.events: list[tuple[float, str, str]] = []
        base = f"{APP_API}/namespaces/{namespace}"
        self._watches = [Watch(stack.hub, f"{base}/applications", self._on_app, self._stop),
                         Watch(stack.hub, f"{base}/applicationsets", self._on_appset, self._stop)]

    def start(self, timeout: float = 30) -> None:
        for w in self._watches:
            w.start()
        for w in self._watches:
            if not w.synced.wait(timeout):
                raise StackError(f"{w.name} not listed in {timeout:.0f}s: {w.error}")

    def stop(self) -> None:
        self._stop.set()
        for w in self._watches:
            if w.is_alive():
                w.join(timeout=10)

    def __enter__(self) -> "AppWatch":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def app(self, name: str) -> dict | None:
        with self._lock:
            return copy.deepcopy(self._apps.get(name))

    def app_names(self, owner: str | None = None) -> list[str]:
        """The Applications that exist now; with `owner`, only those the ApplicationSet owns."""
        with self._lock:
            return sorted(n for n, a in self._apps.items()
                          if owner is None or any(r.get("kind") == "ApplicationSet" and r.get("name") == owner
                                                  for r in (a.get("metadata") or {}).get("ownerReferences") or []))

    def applicationset(self, name: str) -> dict | None:
        with self._lock:
            return copy.deepcopy(self._appsets.get(name))

    def application_status(self, appset: str) -> dict[str, dict]:
        """RollingSync: the ApplicationSet's status.applicationStatus entries by Application."""
        a = self.applicationset(appset) or {}
        return {e.get("application", ""): e for e in (a.get("status") or {}).get("applicationStatus") or []}

    def first_event(self, what: str, app: str) -> float | None:
        with self._lock:
            return next((t for t, w, a in self.events if w == what and a == app), None)

    def _on_app(self, kind: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        now = time.monotonic()
        with self._lock:
            before = self._apps.get(name)
            if kind == "DELETED":
                self._apps.pop(name, None)
                self._views.pop(name, None)
                self.events.append((now, "deleted", name))
                return
            self._apps[name] = obj
            if before is None:
                self.events.append((now, "created", name))
            had_op, has_op = before is not None and "operation" in before, "operation" in obj
            if has_op and not had_op:
                self.events.append((now, "operation", name))
            elif had_op and not has_op:
                self.events.append((now, "operation-removed", name))
            view = app_view(obj)
            if self._views.get(name) != view:
                self._views[name] = view
                self.timeline.append((now, name, *view))

    def _on_appset(self, kind: str, obj: dict) -> None:
        with self._lock:
            if kind == "DELETED":
                self._appsets.pop(obj["metadata"]["name"], None)
            else:
                self._appsets[obj["metadata"]["name"]] = obj
