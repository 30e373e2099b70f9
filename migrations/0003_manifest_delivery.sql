CREATE TABLE manifest_renders (
  resource_id  text PRIMARY KEY,        -- the dispatched resource (Application, cluster)
  revision     text NOT NULL DEFAULT '', -- the resolved revision of the manifests last sent
  source_type  text NOT NULL DEFAULT '', -- Helm | Kustomize | Directory | Plugin | ''
  render_error text,                     -- the latest render's error; NULL when it succeeded
  updated_at   timestamptz NOT NULL DEFAULT now()
);
