"""Hub API client: HTTPS with the admin client certificate, one keep-alive connection per thread."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.parse
from typing import Any, Iterable

from .config import StackError


class KubeError(StackError):
    def __init__(self, method: str, path: str, status: int, body: str):
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class HubClient:
    def __init__(self, env: dict[str, str]):
        url = urllib.parse.urlsplit(env["KUBE_API_URL"])
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=env["KUBE_CA_FILE"])
        self.ctx.load_cert_chain(env["KUBE_CLIENT_CERT_FILE"], env["KUBE_CLIENT_KEY_FILE"])
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=60)
            self._local.conn = conn
        return conn

    def raw(self, method: str, path: str, body: Any = None,
            content_type: str = "application/json") -> tuple[int, str]:
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            headers["Content-Type"] = content_type
        for attempt in range(2):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read().decode("utf-8", "replace")
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json", ok: Iterable[int] = ()) -> dict:
        status, text = self.raw(method, path, body, content_type)
        if 200 <= status < 300 or status in ok:
            try:
                return json.loads(text) if text else {}
            except json.JSONDecodeError:
                return {"raw": text}
        raise KubeError(method, path, status, text)

    def list_all(self, path: str, page: int = 500) -> list[dict]:
        items: list[dict] = []
        cont = ""
        while True:
            sep = "&" if "?" in path else "?"
            q = f"{path}{sep}limit={page}" + (f"&continue={urllib.parse.quote(cont)}" if cont else "")
            body = self.request("GET", q)
            items.extend(body.get("items") or [])
            cont = (body.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items
