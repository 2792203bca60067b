-- Grouping: issues, their per-day counts, and each report's link to its issue.
-- Applied by `stacksift migrate` in one transaction; never edit after merge, add 0003_... instead.

-- "1.10.2" -> {1,10,2}: app versions compare part by part, numerically ("1.10" > "1.9");
-- a part's leading digits count ("2b" -> 2), a part without any counts as 0.
CREATE FUNCTION version_key(v text) RETURNS numeric[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(coalesce(nullif(substring(p FROM '^[0-9]+'), ''), '0')::numeric
                              ORDER BY i), '{}')
    FROM unnest(string_to_array(coalesce(v, ''), '.')) WITH ORDINALITY AS t(p, i)
$$;

-- One row per group of reports with the same signature (common/signature) in one app.
-- count, first_seen, last_seen, versions are kept by the workers' upserts (exact under
-- concurrency: ON CONFLICT DO UPDATE locks the row); first/last_seen are receive times.
CREATE TABLE issues (
    id           bigserial PRIMARY KEY,
    app          text NOT NULL,              -- app name as reports.app ('' if unknown)
    kind         text NOT NULL CHECK (kind IN ('crash', 'hang', 'sample')),
    fingerprint  text NOT NULL,              -- hex SHA-256 of the signature
    title        text NOT NULL,              -- "EXC_BAD_ACCESS: Widget::draw"
    culprit      text NOT NULL,              -- "Widget::draw (shapes.cpp:42)"
    exception    text NOT NULL,              -- exception class: "EXC_CRASH/SIGABRT/NSRangeException"
    basis        text NOT NULL,              -- in_app | any_symbol | offset | exception
    provisional  boolean NOT NULL,           -- grouped by image + offset until the dSYM arrives
    frames       jsonb NOT NULL,             -- the signature frames
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    count        bigint NOT NULL CHECK (count >= 0),
    versions     text[] NOT NULL DEFAULT '{}',   -- app versions seen, sorted
    status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'ignored')),
    resolved_in  text,                       -- app version the fix ships in (status resolved)
    resolved_at  timestamptz,
    regressed    boolean NOT NULL DEFAULT false, -- reopened by a report after being resolved
    regressed_at timestamptz,
    last_report  uuid,                       -- the latest sample
    UNIQUE (app, fingerprint)
);
CREATE INDEX issues_last_seen ON issues (last_seen, id);
CREATE INDEX issues_first_seen ON issues (first_seen, id);
CREATE INDEX issues_count ON issues (count, id);

-- Reports per issue and UTC day of receipt.
CREATE TABLE issue_days (
    issue_id bigint NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    day      date NOT NULL,
    count    bigint NOT NULL CHECK (count >= 0),
    PRIMARY KEY (issue_id, day)
);

ALTER TABLE reports
    ADD COLUMN issue_id       bigint REFERENCES issues (id) ON DELETE SET NULL,
    ADD COLUMN fingerprint    text,          -- of the signature it was grouped by
    ADD COLUMN kind           text,          -- crash | hang | sample
    ADD COLUMN hardware_model text,
    ADD COLUMN symbolicated   text,          -- the symbolicated model as JSON text
                                             -- (crashreport_render_json): written once per
                                             -- report, parsed only when read
    ADD COLUMN processed_at   timestamptz;
-- Stored as written, not compressed: compressing every model costs more CPU than its disk.
ALTER TABLE reports ALTER COLUMN symbolicated SET STORAGE EXTERNAL;
CREATE INDEX reports_issue ON reports (issue_id, received_at, id) WHERE issue_id IS NOT NULL;

-- A dSYM recorded for a UUID that reports wait for sends those reports back to the queue; the
-- workers regroup them. (The worker also re-checks after marking a report pending_dsym, for a
-- dSYM that lands while the report is being processed.)
CREATE FUNCTION reports_release_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE reports SET status = 'received', updated_at = now()
     WHERE status = 'pending_dsym' AND missing_uuids && ARRAY[NEW.uuid];
    RETURN NULL;
END
$$;
CREATE TRIGGER dsyms_release_pending AFTER INSERT ON dsyms
    FOR EACH ROW EXECUTE FUNCTION reports_release_pending();
