-- Minidumps are walked on the server (common/unwind) with the unwind information of their
-- images: an uploaded executable's or dylib's compact unwind and __eh_frame, a dSYM's
-- __debug_frame, a Breakpad .sym's STACK CFI. unwind_uuids holds the in-app images a dump's
-- walk went through (a frame fell in them) without any of it: their callers were found by the
-- frame pointer or by scanning the stack. Names are another matter (missing_uuids: no dSYM).
-- GET /api/v1/dsyms/missing lists both, the report page shows both.
-- Applied by `stacksift migrate` in one transaction; never edit after merge.
ALTER TABLE reports ADD COLUMN unwind_uuids uuid[] NOT NULL DEFAULT '{}';
-- "Which reports wait for this UUID's unwind info" (the trigger below) and the listing of
-- all that wait (GET /api/v1/dsyms/missing) read only the rows that have any.
CREATE INDEX reports_unwind_uuids ON reports USING gin (unwind_uuids) WHERE unwind_uuids <> '{}';
CREATE INDEX reports_unwind_waiting ON reports (received_at) WHERE unwind_uuids <> '{}';

-- A debug file recorded for a UUID (a new row, or a row whose symcache changed: an executable
-- after its dSYM, a .sym or a dSYM after its executable) sends back to the queue the reports
-- whose walk lacked that UUID's unwind info: the workers walk them again from their stored
-- bytes (the new unwind info can change the frames, not only their names) and regroup them.
-- Reports waiting for a dSYM (missing_uuids) are released on a new row, as before.
CREATE OR REPLACE FUNCTION reports_release_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE reports SET status = 'received', updated_at = now()
         WHERE status = 'pending_dsym' AND missing_uuids && ARRAY[NEW.uuid];
    END IF;
    UPDATE reports SET status = 'received', updated_at = now()
     WHERE status IN ('processed', 'pending_dsym') AND unwind_uuids <> '{}'
       AND unwind_uuids && ARRAY[NEW.uuid];
    RETURN NULL;
END
$$;
CREATE TRIGGER dsyms_release_rewalk AFTER UPDATE OF sha256 ON dsyms
    FOR EACH ROW WHEN (OLD.sha256 IS DISTINCT FROM NEW.sha256)
    EXECUTE FUNCTION reports_release_pending();
