-- Issue search (GET /api/v1/issues?q=) reads a table of its own, issue_search: each issue's
-- title and culprit, with the trigram index of 0020 moved onto it.
-- Applied by `stacksift migrate` in one transaction; never edit after merge.
--
-- Why: every report's upsert changes the issue's `count` and `last_seen`, which are indexed,
-- so the issue's new row version is never a HOT update and goes into every index of `issues`;
-- the GIN trigram index on lower(title) and lower(culprit) was the costliest of them (7.6% of
-- the intake backend's samples under tests/bench/bench_ingest.sh, about half its index
-- inserts) for text that an upsert never changes. Here it is written only when an issue is
-- made or its title or culprit changes (a regroup's rename), and goes with the issue (a
-- merge, retention) by the foreign key.
--
-- Kept by row triggers, so that every writer of issues keeps it (the intake's and the
-- workers' upserts, a regroup's renames and split issues, tests and bulk loads): AFTER INSERT
-- fires only for rows actually inserted, never for a proposed row that goes to ON CONFLICT DO
-- UPDATE, and the UPDATE trigger names its columns, which no upsert sets.
CREATE TABLE issue_search (
    issue_id bigint PRIMARY KEY REFERENCES issues (id) ON DELETE CASCADE,
    title    text NOT NULL,             -- issues.title
    culprit  text NOT NULL              -- issues.culprit
);
INSERT INTO issue_search (issue_id, title, culprit) SELECT id, title, culprit FROM issues;

CREATE FUNCTION issues_search_keep() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO issue_search (issue_id, title, culprit) VALUES (NEW.id, NEW.title, NEW.culprit)
    ON CONFLICT (issue_id) DO UPDATE SET title = EXCLUDED.title, culprit = EXCLUDED.culprit;
    RETURN NULL;
END
$$;
CREATE TRIGGER issues_search_ins AFTER INSERT ON issues
    FOR EACH ROW EXECUTE FUNCTION issues_search_keep();
CREATE TRIGGER issues_search_upd AFTER UPDATE OF title, culprit ON issues
    FOR EACH ROW WHEN (NEW.title IS DISTINCT FROM OLD.title
                       OR NEW.culprit IS DISTINCT FROM OLD.culprit)
    EXECUTE FUNCTION issues_search_keep();

DROP INDEX IF EXISTS issues_search;
-- As in 0020: without pg_trgm, search reads every row of issue_search (a narrow table).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX issue_search_text ON issue_search
            USING gin (lower(title) gin_trgm_ops, lower(culprit) gin_trgm_ops);
    END IF;
END
$$;
