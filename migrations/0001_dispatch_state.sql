-- Dispatcher state: what was sent to which cluster, and an outbox so a change taken from the hub
-- is never lost before the broker accepted it. Forward-only; applied by both services at start
-- under a PostgreSQL advisory lock (libs/store/postgres/migrator.cc).

-- One row per (hub Application, cluster): the Maestro resource the dispatcher owns.
CREATE TABLE dispatched_resources (
  resource_id        uuid        PRIMARY KEY,          -- UUIDv5(source, manifestworks..., cluster, work name)
  cluster            text        NOT NULL,             -- Maestro consumer = ManagedCluster name
  hub_namespace      text        NOT NULL,
  hub_name           text        NOT NULL,
  hub_uid            text        NOT NULL,
  work_name          text        NOT NULL,             -- <hub namespace>-<hub name>
  appset_namespace   text,                             -- owning ApplicationSet, when there is one
  appset_name        text,
  version            integer     NOT NULL DEFAULT 0,   -- resourceversion last sent
  payload_hash       text        NOT NULL,             -- hex SHA-256 of the canonical payload
  payload            text        NOT NULL,             -- the ManifestBundle JSON last sent (answers spec resyncs)
  metadata           text,                             -- the `metadata` extension (JSON) last sent
  last_published_at  timestamptz,                      -- when the broker accepted it; NULL = pending
  deletion_state     smallint    NOT NULL DEFAULT 0,   -- 0 live, 1 delete requested, 2 delete confirmed
  deletion_requested_at timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT dispatched_resources_hub_cluster UNIQUE (hub_namespace, hub_name, cluster)
);
CREATE INDEX dispatched_resources_cluster ON dispatched_resources (cluster);
CREATE INDEX dispatched_resources_appset ON dispatched_resources (appset_namespace, appset_name)
  WHERE appset_name IS NOT NULL;
CREATE INDEX dispatched_resources_deleting ON dispatched_resources (deletion_state)
  WHERE deletion_state <> 0;

-- Events accepted from the hub but not yet accepted by the broker, in order.
CREATE TABLE outbox (
  seq          bigserial   PRIMARY KEY,
  resource_id  uuid        NOT NULL,
  cluster      text        NOT NULL,
  action       text        NOT NULL CHECK (action IN ('create', 'update', 'delete')),
  version      integer     NOT NULL,
  payload_hash text        NOT NULL,
  event        text        NOT NULL,                   -- the CloudEvent, structured JSON
  created_at   timestamptz NOT NULL DEFAULT now(),
  attempts     integer     NOT NULL DEFAULT 0,
  last_error   text
);
CREATE INDEX outbox_resource ON outbox (resource_id);
