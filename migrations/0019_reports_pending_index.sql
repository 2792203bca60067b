-- Reports waiting for a dSYM, found without reading the others: the missing-dSYMs page
-- (GET /api/v1/dsyms/missing) groups the waiting reports by UUID, and the GIN index on
-- missing_uuids answers only "waits for this UUID"; without this index the page read every
-- stored report (40 ms at 30,000 reports, seconds at a million).
-- Applied by `stacksift migrate` in one transaction; never edit after merge.
CREATE INDEX reports_pending_dsym ON reports (received_at) WHERE status = 'pending_dsym';
