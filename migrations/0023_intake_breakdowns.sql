-- The intake's group commit keeps the breakdown counters of the reports it inserts itself,
-- in the statement that inserts them (server/store/store_intake.c), instead of the
-- statement-level INSERT trigger of 0016. Applied by `stacksift migrate` in one transaction;
-- never edit after merge.
--
-- Why: the trigger captured every inserted row (raw body and model included) in a transition
-- table and ran its own INSERT through plpgsql and SPI after the statement: 0.24-0.35 ms a
-- commit, an eighth of the intake statement's time (pg_stat_statements under
-- tests/bench/bench_ingest.sh). Inserting a report that already belongs to an issue is what
-- the intake's processed statement alone does; every other insert stores reports without an
-- issue (the workers give them one by UPDATE, counted by reports_breakdowns_upd, as are a
-- regroup's moves). A writer that inserts reports with an issue outside the intake (a test,
-- a bulk load) adds their counters itself.
DROP TRIGGER reports_breakdowns_ins ON reports;
DROP FUNCTION reports_breakdowns_ins();
