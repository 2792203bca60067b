-- issues.first_version (0018, 0021): the BEFORE INSERT trigger is called only when the
-- inserted row does not carry the answer already.
-- Applied by `stacksift migrate` in one transaction; never edit after merge.
--
-- The trigger fires for every row an upsert proposes, also when the row then goes to ON
-- CONFLICT DO UPDATE: once per group of every intake commit. A PL/pgSQL call per row, where
-- a row of one version (almost every proposed row) has that version as its first one. The
-- intake's upsert now proposes first_version = versions[1] for a row of one version, and the
-- WHEN clause (evaluated without a function call) skips the trigger for exactly those rows:
-- for them it would set the same value. Every other row (several versions, none, a writer
-- that leaves first_version out) goes through the trigger as before.
DROP TRIGGER issues_first_version_ins ON issues;
CREATE TRIGGER issues_first_version_ins BEFORE INSERT ON issues
    FOR EACH ROW WHEN (cardinality(NEW.versions) IS DISTINCT FROM 1
                       OR NEW.first_version IS DISTINCT FROM NEW.versions[1])
    EXECUTE FUNCTION issues_set_first_version();
