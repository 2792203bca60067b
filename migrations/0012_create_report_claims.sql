-- A report that brings its own id (a Sentry event's event_id) is stored once per project: an
-- SDK that resends an event whose 200 it never saw gets the same id back and nothing new is
-- stored, however many resends run at once and on whichever nodes. reports' key is
-- (id, received_at) since reports are partitioned by day, so the once-only rule lives here:
-- the intake's INSERT claims (project_id, id) in the same statement that inserts the report
-- (ON CONFLICT DO NOTHING: a concurrent claim of the same id waits for the other
-- transaction, then finds it) and inserts only the reports whose claim it made.
-- Claims are deleted with the reports they stand for (retention, store_maintain.c).
-- Applied by `stacksift migrate` in one transaction; never edit after merge.

CREATE TABLE report_claims (
    project_id  bigint NOT NULL,
    id          uuid NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, id)
);
CREATE INDEX report_claims_received ON report_claims (received_at);

-- The Sentry events stored before this migration.
INSERT INTO report_claims (project_id, id, received_at)
SELECT project_id, id, min(received_at) FROM reports WHERE format = 'sentry' GROUP BY 1, 2;
