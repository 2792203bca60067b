-- Read-only views for dashboards outside stacksift (deploy/grafana/): counts per day, per
-- issue, per app version, and the processing queue. Days are UTC days of receipt, as in
-- issue_days. Applied by `stacksift migrate` in one transaction; never edit after merge.
-- A Grafana (or any SQL client) role needs only SELECT on these views, e.g.:
--   CREATE ROLE grafana LOGIN PASSWORD '...';
--   GRANT SELECT ON stats_issue_daily, stats_version_daily, stats_daily, stats_issues,
--                   stats_queue TO grafana;

-- Reports per issue and day, with what a panel needs to label and filter the series.
CREATE VIEW stats_issue_daily AS
SELECT d.day, d.issue_id, i.app, i.kind, i.title, i.status, d.count AS reports
  FROM issue_days d
  JOIN issues i ON i.id = d.issue_id;

-- Grouped reports per app version and day (a report counts once it is in an issue).
CREATE VIEW stats_version_daily AS
SELECT (r.received_at AT TIME ZONE 'UTC')::date AS day, i.app, i.kind,
       coalesce(r.app_version, '') AS app_version, count(*) AS reports,
       count(DISTINCT r.issue_id) AS issues
  FROM reports r
  JOIN issues i ON i.id = r.issue_id
 GROUP BY 1, 2, 3, 4;

-- Per app, kind and day: reports grouped, issues seen, issues seen for the first time.
CREATE VIEW stats_daily AS
SELECT d.day, i.app, i.kind, sum(d.count) AS reports, count(*) AS issues,
       count(*) FILTER (WHERE (i.first_seen AT TIME ZONE 'UTC')::date = d.day) AS new_issues
  FROM issue_days d
  JOIN issues i ON i.id = d.issue_id
 GROUP BY 1, 2, 3;

-- One row per issue, for tables ("top issues") and single stats.
CREATE VIEW stats_issues AS
SELECT i.id, i.app, i.kind, i.title, i.culprit, i.status, i.count AS reports, i.first_seen,
       i.last_seen, i.regressed, i.provisional,
       i.versions[array_length(i.versions, 1)] AS latest_version
  FROM issues i;

-- Reports by processing status: the queue, reports waiting for dSYMs, failures.
CREATE VIEW stats_queue AS
SELECT s.status, coalesce(c.reports, 0) AS reports
  FROM (VALUES ('received'), ('pending_dsym'), ('processed'), ('failed')) AS s (status)
  LEFT JOIN (SELECT status, count(*) AS reports FROM reports GROUP BY status) c
    ON c.status = s.status;
