-- Status-sink state: the last status applied per resource (so a restart resumes without
-- rewriting unchanged statuses) and per-ApplicationSet counts by sync and health.

CREATE TABLE resource_status (
  resource_id       uuid        PRIMARY KEY,
  last_sequence_id  bigint      NOT NULL,             -- snowflake id of the last applied status event
  status_hash       text        NOT NULL,             -- statushash of the last applied status
  material_hash     text        NOT NULL,             -- hash of the material fields last written to the hub
  sync_status       text,
  health_status     text,
  appset_namespace  text,
  appset_name       text,
  volatile_written_at timestamptz,                    -- last write of reconciledAt/observedAt only
  applied_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX resource_status_appset ON resource_status (appset_namespace, appset_name)
  WHERE appset_name IS NOT NULL;
