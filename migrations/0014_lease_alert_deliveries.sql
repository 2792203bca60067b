-- Alert deliveries hold a lease on their events instead of a transaction: a node claims due
-- events in one short statement (FOR UPDATE SKIP LOCKED, then next_at moved past the time a
-- delivery can take and a fresh `claim` token set), POSTs them concurrently, and records each
-- outcome only where the token is still its own. A receiver that never answers then holds
-- only its own deliveries, not a transaction that every other event of the batch waits on,
-- and a node that dies mid-delivery leaves events that fall due again when the lease lapses.
-- Applied by `stacksift migrate` in one transaction; never edit after merge.

ALTER TABLE alert_events
    ADD COLUMN claim uuid,          -- the delivery in progress; NULL when none is
    ADD COLUMN claimed_by text;     -- the node (application_name) of the latest claim

-- The claim picks the due events of each webhook URL in turn: by rule, oldest due first.
CREATE INDEX alert_events_rule_due ON alert_events (rule_id, next_at) WHERE status = 'pending';
