-- Switching an Application between Application and manifest delivery (ADR 0007, issue #38 item
-- 6): how the bundle last recorded delivers it. 0 Application, 1 manifests, and the first step of
-- a hand-over, which the agent must acknowledge (resource_status.acked_version) before the second
-- goes: 2 the Application without Argo CD's resources finalizer, 3 the manifests with the delete
-- option Orphan. Kept here, so a restarted dispatcher resumes a hand-over where it was.
ALTER TABLE dispatched_resources ADD COLUMN delivery smallint NOT NULL DEFAULT 0;
UPDATE dispatched_resources SET delivery = 1
  WHERE resource_id::text IN (SELECT resource_id FROM manifest_renders);
CREATE INDEX dispatched_resources_handover ON dispatched_resources (resource_id)
  WHERE delivery IN (2, 3);
