"""A small HTTPS client for the hub kube-apiserver and an etcd seeder, both thread-safe.

Each thread keeps its own keep-alive connection (http.client is not thread-safe). The bench's
own requests are counted by verb so they can be told apart from the services' requests in
kube-apiserver's apiserver_request_total.
"""

import base64
import http.client
import json
import ssl
import threading
import time
import urllib.parse

APPS = '/apis/argoproj.io/v1alpha1'


class HubClient:
    def __init__(self, api_url, ca_file, cert_file, key_file, token=None, timeout=60):
        u = urllib.parse.urlparse(api_url)
        self._host, self._port = u.hostname, u.port or 443
        self._ctx = ssl.create_default_context(cafile=ca_file)
        if cert_file and key_file:
            self._ctx.load_cert_chain(cert_file, key_file)
        self._token = token
        self._timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self.requests = {}  # (verb, resource) -> count, what this client sent
        self.bytes = {'request_body': 0, 'response_body': 0}

    @classmethod
    def from_env(cls, env):
        return cls(env['KUBE_API_URL'], env.get('KUBE_CA_FILE'), env.get('KUBE_CLIENT_CERT_FILE'),
                   env.get('KUBE_CLIENT_KEY_FILE'),
                   None if env.get('KUBE_CLIENT_CERT_FILE') else env.get('KUBE_TOKEN'))

    def _conn(self):
        c = getattr(self._local, 'conn', None)
        if c is None:
            c = http.client.HTTPSConnection(self._host, self._port, context=self._ctx,
                                            timeout=self._timeout)
            self._local.conn = c
        return c

    def _count(self, verb, resource):
        with self._lock:
            self.requests[(verb, resource)] = self.requests.get((verb, resource), 0) + 1

    def request(self, method, path, body=None, content_type='application/json', resource='',
                verb=None):
        """Returns (status, response bytes); retries once on a dropped keep-alive connection."""
        headers = {'Accept': 'application/json'}
        if self._token:
            headers['Authorization'] = 'Bearer ' + self._token
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            if isinstance(data, str):
                data = data.encode()
            headers['Content-Type'] = content_type
        self._count(verb or method, resource)
        with self._lock:
            self.bytes['request_body'] += len(data or b'')
        for attempt in range(3):
            conn = self._conn()
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
                with self._lock:
                    self.bytes['response_body'] += len(payload)
                if resp.status == 429 and attempt < 2:
                    time.sleep(float(resp.getheader('Retry-After', '1') or 1))
                    continue
                return resp.status, payload
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
        return 0, b''

    def get_json(self, path, resource=''):
        status, payload = self.request('GET', path, resource=resource)
        if status != 200:
            raise RuntimeError(f'GET {path}: HTTP {status}: {payload[:300]!r}')
        return json.loads(payload)

    def merge_patch(self, path, patch, resource=''):
        return self.request('PATCH', path, patch, 'application/merge-patch+json',
                            resource=resource)

    def list_all(self, path, resource='', limit=500, fn=None):
        """Pages through a list; calls fn(item) per item (or collects them)."""
        items = [] if fn is None else None
        cont = ''
        while True:
            sep = '&' if '?' in path else '?'
            q = f'{path}{sep}limit={limit}'
            if cont:
                q += '&continue=' + urllib.parse.quote(cont)
            page = self.get_json(q, resource=resource)
            for it in page.get('items', []):
                if fn is None:
                    items.append(it)
                else:
                    fn(it)
            cont = page.get('metadata', {}).get('continue', '')
            if not cont:
                return items


class EtcdSeeder:
    """Writes objects into the API server's etcd in its storage format (etcd v3 HTTP gateway).

    kube-apiserver stores a custom resource as JSON under
    /registry/<group>/<resource>/<namespace>/<name>, without metadata.resourceVersion (the etcd
    revision is the resourceVersion); bench/kube/kube_bench.cc --seed-etcd does the same.
    """

    def __init__(self, endpoint, timeout=60):
        u = urllib.parse.urlparse(endpoint)
        self._host, self._port = u.hostname, u.port
        self._timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self.max_revision = 0

    def _conn(self):
        c = getattr(self._local, 'conn', None)
        if c is None:
            c = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            self._local.conn = c
        return c

    def put(self, key, value_bytes):
        body = json.dumps({'key': base64.b64encode(key.encode()).decode(),
                           'value': base64.b64encode(value_bytes).decode()})
        for attempt in range(3):
            conn = self._conn()
            try:
                conn.request('POST', '/v3/kv/put', body=body,
                             headers={'Content-Type': 'application/json'})
                resp = conn.getresponse()
                payload = resp.read()
                if resp.status != 200:
                    raise RuntimeError(f'etcd put {key}: HTTP {resp.status}: {payload[:200]!r}')
                rev = int(json.loads(payload).get('header', {}).get('revision', '0'))
                with self._lock:
                    self.max_revision = max(self.max_revision, rev)
                return
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise


def stored_application(app, uid):
    """The Application as kube-apiserver would have stored it after a create."""
    obj = json.loads(json.dumps(app))
    meta = obj.setdefault('metadata', {})
    meta.pop('resourceVersion', None)
    meta['uid'] = uid
    meta.setdefault('creationTimestamp', time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
    meta['generation'] = 1
    obj.setdefault('apiVersion', 'argoproj.io/v1alpha1')
    obj.setdefault('kind', 'Application')
    return obj


def parallel(items, fn, threads):
    """Runs fn(item) for every item of an iterable on `threads` threads (items are pulled lazily,
    so a generator of 300,000 objects is never materialized); returns (done, failures, errors)."""
    it = iter(items)
    lock = threading.Lock()
    state = {'done': 0, 'failures': 0, 'errors': []}

    def worker():
        while True:
            with lock:
                try:
                    item = next(it)
                except StopIteration:
                    return
            try:
                fn(item)
                ok = True
            except Exception as e:  # noqa: BLE001 - counted and reported
                ok = False
                err = str(e)
            with lock:
                if ok:
                    state['done'] += 1
                else:
                    state['failures'] += 1
                    if len(state['errors']) < 5:
                        state['errors'].append(err)

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return state['done'], state['failures'], state['errors']
