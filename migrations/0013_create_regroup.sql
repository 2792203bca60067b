-- Regrouping: when the grouping rules change (common/signature's SIGNATURE_VERSION), the stored
-- reports are re-fingerprinted and their issues merged or split, carrying each issue's counts,
-- first/last seen, versions, status and resolved-in (`stacksift regroup`; `stacksift migrate`
-- runs it when the stored rules are older than the binary's). Applied by `stacksift migrate`
-- in one transaction; never edit after merge.

-- The rules the stored fingerprints were made by: one row.
CREATE TABLE signature_rules (
    id           boolean PRIMARY KEY DEFAULT true CHECK (id),
    version      text NOT NULL,          -- SIGNATURE_VERSION, "stacksift-signature-v2"
    regrouped_at timestamptz             -- when a regroup last brought the reports to it
);
-- Fingerprints stored before this migration were made by the first rules.
INSERT INTO signature_rules (version) VALUES ('stacksift-signature-v1');

-- A regroup's work list: each grouped report's new signature beside the issue it was in,
-- filled page by page (a report read, parsed, symbolicated and signed at a time), then
-- applied in one transaction (store_regroup_apply) and emptied. Unlogged: a crash loses only
-- a regroup in progress, which starts over.
CREATE UNLOGGED TABLE regroup_reports (
    report_id   uuid NOT NULL,
    received_at timestamptz NOT NULL,
    old_issue   bigint NOT NULL,          -- reports.issue_id when it was read
    project_id  bigint NOT NULL,
    app         text NOT NULL,
    kind        text NOT NULL,
    fingerprint text NOT NULL,            -- the new one
    title       text NOT NULL,
    culprit     text NOT NULL,
    exception   text NOT NULL,
    basis       text NOT NULL,
    provisional boolean NOT NULL,
    frames      jsonb NOT NULL,
    PRIMARY KEY (report_id, received_at)
);

-- An issue a regroup makes is a part split off an issue that exists already, not a new crash:
-- no new_issue alert (the regroup sets stacksift.regroup for its transaction).
CREATE OR REPLACE FUNCTION alerts_issue_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('stacksift.regroup', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO alert_events (rule_id, project_id, kind, cause, payload)
    SELECT r.id, r.project_id, r.kind, 'issue:' || NEW.id,
           jsonb_build_object('issue', alerts_issue_facts(NEW))
      FROM alert_rules r
     WHERE r.kind = 'new_issue' AND r.project_id = NEW.project_id
    ON CONFLICT (rule_id, cause) DO NOTHING;
    RETURN NULL;
END
$$;
