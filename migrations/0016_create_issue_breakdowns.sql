-- An issue's breakdowns (app version, OS version, device model) kept as counters, as its count
-- and per-day counts are: the issue page reads a few rows instead of counting over the issue's
-- reports on every request (a top crash holds millions). Applied by `stacksift migrate` in one
-- transaction; never edit after merge.
--
-- Exact under every writer: one statement-level trigger on reports adds what each statement
-- changed (the intake's group commit, the workers' batches, reprocessing, a regroup's moves),
-- from its transition tables, aggregated per (issue, dimension, value). Counts stay when
-- retention drops report partitions (as issues.count does); a regroup adds a merged issue's
-- counters to the issue it joins; deleting an issue deletes its counters.

CREATE TABLE issue_breakdowns (
    issue_id bigint NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    dim      smallint NOT NULL,   -- 0 app_version, 1 os_version, 2 hardware_model
    value    text NOT NULL,       -- '' = not given
    count    bigint NOT NULL,
    PRIMARY KEY (issue_id, dim, value)
);

INSERT INTO issue_breakdowns (issue_id, dim, value, count)
SELECT issue_id, d, v, count(*) FROM (
    SELECT r.issue_id, x.d, x.v FROM reports r CROSS JOIN LATERAL (VALUES
        (0::smallint, coalesce(r.app_version, '')), (1::smallint, coalesce(r.os_version, '')),
        (2::smallint, coalesce(r.hardware_model, ''))) AS x(d, v)
    WHERE r.issue_id IS NOT NULL) t
GROUP BY 1, 2, 3;

-- What a statement did to reports: +1 per new row in an issue (INSERT), and for an UPDATE -1
-- per old row in an issue too, summed per (issue, dimension, value), so that unchanged rows
-- cancel out. One INSERT ... ON CONFLICT per statement, written out in each function (plpgsql
-- caches its plan per session; a shared SQL helper fed arrays cost three times as much).
-- Issues deleted in the same transaction (a regroup's merge, retention) are skipped: their
-- counters went with them.
CREATE FUNCTION reports_breakdowns_ins() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO issue_breakdowns AS b (issue_id, dim, value, count)
    SELECT n.issue_id, x.d, x.v, count(*) FROM new_rows n
    CROSS JOIN LATERAL (VALUES (0::smallint, coalesce(n.app_version, '')),
        (1::smallint, coalesce(n.os_version, '')),
        (2::smallint, coalesce(n.hardware_model, ''))) AS x(d, v)
    WHERE n.issue_id IS NOT NULL
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (issue_id, dim, value) DO UPDATE SET count = b.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE FUNCTION reports_breakdowns_upd() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO issue_breakdowns AS b (issue_id, dim, value, count)
    SELECT t.issue_id, x.d, x.v, sum(t.delta) FROM (
        SELECT 1::bigint AS delta, n.issue_id, n.app_version, n.os_version, n.hardware_model
          FROM new_rows n WHERE n.issue_id IS NOT NULL
        UNION ALL
        SELECT -1, o.issue_id, o.app_version, o.os_version, o.hardware_model
          FROM old_rows o WHERE o.issue_id IS NOT NULL) t
    CROSS JOIN LATERAL (VALUES (0::smallint, coalesce(t.app_version, '')),
        (1::smallint, coalesce(t.os_version, '')),
        (2::smallint, coalesce(t.hardware_model, ''))) AS x(d, v)
    WHERE EXISTS (SELECT 1 FROM issues i WHERE i.id = t.issue_id)
    GROUP BY 1, 2, 3 HAVING sum(t.delta) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (issue_id, dim, value) DO UPDATE SET count = b.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE TRIGGER reports_breakdowns_ins AFTER INSERT ON reports
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION reports_breakdowns_ins();
CREATE TRIGGER reports_breakdowns_upd AFTER UPDATE ON reports
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION reports_breakdowns_upd();
