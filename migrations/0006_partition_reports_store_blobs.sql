-- Shared-nothing nodes and retention. Applied by `stacksift migrate` in one
-- transaction; never edit after merge.
--
-- 1. Symcaches and original dSYM uploads live in Postgres, content-addressed and chunked
--    (blobs + blob_chunks), so that a node needs nothing but the database: it downloads a
--    symcache into its own cache directory on first use (server/store/README.md says why
--    bytea chunks and not large objects).
-- 2. reports is range-partitioned by UTC day of receipt, so that retention drops a partition
--    instead of DELETEing millions of rows. Every existing row is kept.
-- 3. A small table for the nodes (heartbeats for /metrics) and one for maintenance runs
--    (at most one per interval across all nodes).

-- ---- blobs --------------------------------------------------------------------------------

-- One row per distinct content; written in the same transaction as its chunks, so a blob row
-- is never visible without all of its chunks.
CREATE TABLE blobs (
    sha256     text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),  -- of the whole content
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    chunks     integer NOT NULL CHECK (chunks >= 0),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The content in order: chunk `seq` holds bytes [seq * chunk size, ...). Every chunk but the
-- last is full; the chunk size is the writer's (1 MiB today) and readers do not depend on it.
CREATE TABLE blob_chunks (
    sha256 text NOT NULL REFERENCES blobs (sha256) ON DELETE CASCADE,
    seq    integer NOT NULL CHECK (seq >= 0),
    data   bytea NOT NULL,
    PRIMARY KEY (sha256, seq)
);
-- Symcaches are mostly incompressible tables and uploads are zips: do not spend CPU on pglz.
ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- A dSYM row points at its symcache and at the upload it was built from. Both are NULL for
-- rows recorded before this migration until the node holding the file backfills them
-- (`stacksift serve` does it at start). Deferred: the row is written before its blobs in the
-- upload transaction, and the check runs at COMMIT.
ALTER TABLE dsyms
    ADD COLUMN symcache_blob text REFERENCES blobs (sha256) DEFERRABLE INITIALLY DEFERRED,
    ADD COLUMN original_blob text REFERENCES blobs (sha256) DEFERRABLE INITIALLY DEFERRED,
    ADD COLUMN original_name text,          -- file name of the upload part (a bare Mach-O's
                                            -- image is named after its file)
    ADD COLUMN last_used_at  timestamptz NOT NULL DEFAULT now();  -- dSYM retention clock
CREATE INDEX dsyms_symcache_blob ON dsyms (symcache_blob);
CREATE INDEX dsyms_original_blob ON dsyms (original_blob);
CREATE INDEX dsyms_last_used ON dsyms (last_used_at);

-- ---- reports, partitioned by day -----------------------------------------------------------

ALTER TABLE reports RENAME TO reports_unpartitioned;
ALTER INDEX reports_queue RENAME TO reports_unpartitioned_queue;
ALTER INDEX reports_missing_uuids RENAME TO reports_unpartitioned_missing_uuids;
ALTER INDEX reports_issue RENAME TO reports_unpartitioned_issue;
ALTER TABLE reports_unpartitioned RENAME CONSTRAINT reports_pkey TO reports_unpartitioned_pkey;
ALTER TABLE reports_unpartitioned
    RENAME CONSTRAINT reports_issue_id_fkey TO reports_unpartitioned_issue_id_fkey;

-- Same columns in the same order, defaults, CHECKs and storage; the primary key must hold
-- the partition key. Which node's intake accepted the report: /metrics' queue per node.
CREATE TABLE reports (LIKE reports_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS
                      INCLUDING STORAGE INCLUDING GENERATED INCLUDING IDENTITY)
    PARTITION BY RANGE (received_at);
ALTER TABLE reports ADD PRIMARY KEY (id, received_at),
    ADD FOREIGN KEY (issue_id) REFERENCES issues (id) ON DELETE SET NULL,
    ADD COLUMN received_by text NOT NULL DEFAULT current_setting('application_name');
CREATE INDEX reports_queue ON reports (received_at) WHERE status = 'received';
CREATE INDEX reports_missing_uuids ON reports USING gin (missing_uuids) WHERE status = 'pending_dsym';
CREATE INDEX reports_issue ON reports (issue_id, received_at, id) WHERE issue_id IS NOT NULL;

-- Rows whose day has no partition yet land here; stacksift_reports_partition_create moves
-- them out when it creates their day. Normally empty: partitions are made days ahead.
CREATE TABLE reports_default PARTITION OF reports DEFAULT;

-- The partition of UTC day `day`: reports_pYYYYMMDD. Creates it (moving that day's rows out
-- of reports_default) unless it exists; returns true if it was created now.
CREATE FUNCTION stacksift_reports_partition_create(day date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := 'reports_p' || to_char(day, 'YYYYMMDD');
    lo   text := quote_literal(to_char(day, 'YYYY-MM-DD') || ' 00:00:00+00');
    hi   text := quote_literal(to_char(day + 1, 'YYYY-MM-DD') || ' 00:00:00+00');
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- Made standalone and attached, so that rows already in the default partition can move in
    -- first (attaching validates that the default partition holds none of the day's rows).
    EXECUTE format('CREATE TABLE %I (LIKE reports INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                   'INCLUDING STORAGE)', part);
    EXECUTE format('WITH moved AS (DELETE FROM reports_default WHERE received_at >= %s '
                   'AND received_at < %s RETURNING *) INSERT INTO %I SELECT * FROM moved',
                   lo, hi, part);
    EXECUTE format('ALTER TABLE reports ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   part, lo, hi);
    RETURN true;
END
$$;

-- A partition for every day that has reports, and for today and the next week.
SELECT stacksift_reports_partition_create(d::date)
  FROM (SELECT DISTINCT (received_at AT TIME ZONE 'UTC')::date AS d FROM reports_unpartitioned
        UNION
        SELECT generate_series((now() AT TIME ZONE 'UTC')::date,
                               (now() AT TIME ZONE 'UTC')::date + 7, interval '1 day')::date) days;

INSERT INTO reports SELECT *, 'before-partitioning' FROM reports_unpartitioned;

-- The views bound to the old table by OID: point them at the new one.
CREATE OR REPLACE VIEW stats_version_daily AS
SELECT (r.received_at AT TIME ZONE 'UTC')::date AS day, i.app, i.kind,
       coalesce(r.app_version, '') AS app_version, count(*) AS reports,
       count(DISTINCT r.issue_id) AS issues
  FROM reports r
  JOIN issues i ON i.id = r.issue_id
 GROUP BY 1, 2, 3, 4;

CREATE OR REPLACE VIEW stats_queue AS
SELECT s.status, coalesce(c.reports, 0) AS reports
  FROM (VALUES ('received'), ('pending_dsym'), ('processed'), ('failed')) AS s (status)
  LEFT JOIN (SELECT status, count(*) AS reports FROM reports GROUP BY status) c
    ON c.status = s.status;

DROP TABLE reports_unpartitioned;

-- ---- nodes and maintenance ----------------------------------------------------------------

-- Every `stacksift serve` process; heartbeat every few seconds (GET /metrics shows them all).
CREATE TABLE nodes (
    name         text PRIMARY KEY,           -- STACKSIFT_NODE_NAME (default: host name)
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    workers      integer NOT NULL DEFAULT 0,
    in_progress  integer NOT NULL DEFAULT 0, -- reports its workers hold claimed now
    processed    bigint NOT NULL DEFAULT 0,  -- reports its workers finished since start
    cache_hits   bigint NOT NULL DEFAULT 0,  -- symcache file cache, since start
    cache_misses bigint NOT NULL DEFAULT 0
);

-- Each periodic job (today: 'retention'): its last run, so that however many nodes run it,
-- it happens at most once per interval (it also runs under an advisory lock), and what all
-- its runs did so far (/metrics on any node shows these).
CREATE TABLE maintenance_runs (
    job                text PRIMARY KEY,
    node               text NOT NULL,          -- the node that ran it last
    started_at         timestamptz NOT NULL,
    finished_at        timestamptz,            -- of the last complete run
    runs               bigint NOT NULL DEFAULT 0,
    partitions_dropped bigint NOT NULL DEFAULT 0,
    reports_expired    bigint NOT NULL DEFAULT 0,
    issues_expired     bigint NOT NULL DEFAULT 0,
    dsyms_expired      bigint NOT NULL DEFAULT 0,
    blobs_deleted      bigint NOT NULL DEFAULT 0
);
