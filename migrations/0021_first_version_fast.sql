-- issues.first_version (0018) without an SQL-language call for an issue of one version.
-- Applied by `stacksift migrate` in one transaction; never edit after merge.
--
-- The BEFORE INSERT trigger fires for every row an upsert proposes, also when the row then
-- goes to ON CONFLICT DO UPDATE: once per group of every intake commit and worker batch.
-- Each call of versions_first (LANGUAGE sql) parsed and planned its query again (Postgres 15
-- keeps no plan of an SQL function between calls): about a tenth of Postgres's CPU per report
-- on tests/bench/bench_ingest.sh. A proposed row has one version almost always (the reports
-- of one group in one batch), whose first is that version: no query. Several versions still
-- go through versions_first, so the answer is the same for every input.
CREATE OR REPLACE FUNCTION issues_set_first_version() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(NEW.versions) = 1 THEN
        NEW.first_version := NEW.versions[1];
    ELSIF coalesce(cardinality(NEW.versions), 0) = 0 THEN
        NEW.first_version := NULL;
    ELSE
        NEW.first_version := versions_first(NEW.versions);
    END IF;
    RETURN NEW;
END
$$;
