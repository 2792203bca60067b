-- Reports' large columns compressed with lz4, for durable ingest.
--
-- Every report is written twice: its raw bytes by the intake's COPY (before its 202), then its
-- symbolicated model (~17 kB of JSON for 30 frames) by a worker. Stored uncompressed (0002) the
-- model was ~75% of the WAL of a report, and that WAL must be flushed to disk by the next
-- intake commit, which waits for it: lz4 cuts the model to ~1/5 at a few microseconds of CPU
-- (pglz, the default, takes ~10 times longer for the same size, which is why 0002 kept the
-- model uncompressed). The raw bytes were compressed with pglz already; lz4 takes less of the
-- committing backend's time for the same size.
--
-- lz4 needs PostgreSQL 14 or later built --with-lz4 (Debian's and the postgres:15 image are).
-- Elsewhere this migration leaves the columns as they were. Rows already stored keep their
-- form until rewritten; both are read alike.
DO $$
DECLARE
    part regclass;
BEGIN
    IF current_setting('server_version_num')::int < 140000
       OR NOT EXISTS (SELECT 1 FROM pg_settings
                      WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        RAISE NOTICE 'lz4 compression is not available: reports keep pglz (raw) and no compression (symbolicated)';
        RETURN;
    END IF;
    -- SET STORAGE recurses to the partitions, SET COMPRESSION does not: each partition, then
    -- the partitioned table (what a new partition copies, below).
    EXECUTE 'ALTER TABLE reports ALTER COLUMN symbolicated SET STORAGE EXTENDED';
    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'reports'::regclass
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN raw SET COMPRESSION lz4, '
                       'ALTER COLUMN symbolicated SET COMPRESSION lz4', part);
    END LOOP;
    EXECUTE 'ALTER TABLE reports ALTER COLUMN raw SET COMPRESSION lz4, '
            'ALTER COLUMN symbolicated SET COMPRESSION lz4';
    -- Partitions made from now on copy the compression method too (0006 copied the storage).
    EXECUTE $f$
CREATE OR REPLACE FUNCTION stacksift_reports_partition_create(day date) RETURNS boolean
LANGUAGE plpgsql AS $body$
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
                   'INCLUDING STORAGE INCLUDING COMPRESSION)', part);
    EXECUTE format('WITH moved AS (DELETE FROM reports_default WHERE received_at >= %s '
                   'AND received_at < %s RETURNING *) INSERT INTO %I SELECT * FROM moved',
                   lo, hi, part);
    EXECUTE format('ALTER TABLE reports ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   part, lo, hi);
    RETURN true;
END
$body$
$f$;
END
$$;
