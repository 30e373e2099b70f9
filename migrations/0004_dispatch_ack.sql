-- End-to-end acknowledgement (docs/reliability.md, finding 6): the dispatch version the agent
-- reports it applied. The dispatcher stamps its version into the spoke Application's
-- `apps.open-cluster-management.io/dispatch-version` annotation and reads it back through a
-- status feedback rule (`dispatchVersion`); the sink saves it with the status that carried it.
-- The dispatcher sends again what an agent that is reporting has not acknowledged
-- (DispatchStore::UnacknowledgedResources), so a change Maestro accepted and never delivered,
-- or reverted, reaches the agent. 0003 is manifest delivery's (issue #38).
ALTER TABLE resource_status ADD COLUMN acked_version integer;
