-- Alerts: rules per project and the outbox of alert events they produce. Applied by
-- `stacksift migrate` in one transaction; never edit after merge.
--
-- An event is written in the same transaction as the change that causes it (triggers on
-- issues and callsites below; the sessions batch for crash-free drops; the spike sweep's own
-- transaction), at most once per (rule, cause): UNIQUE (rule_id, cause) with ON CONFLICT DO
-- NOTHING, so that two nodes, a retried transaction or a restart never make a second one.
-- Any node delivers pending events (FOR UPDATE SKIP LOCKED), with the same id on every try.

CREATE TABLE alert_rules (
    id         bigserial PRIMARY KEY,
    project_id bigint NOT NULL DEFAULT 1 REFERENCES projects (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('new_issue', 'regression', 'spike', 'crash_free',
                                             'new_callsite')),
    url        text NOT NULL,                   -- the webhook (http or https)
    secret     text NOT NULL,                   -- HMAC-SHA256 key of X-Stacksift-Signature
    threshold  double precision,                -- spike: N times the trailing hourly mean;
                                                -- crash_free: the fraction to stay above
    min_count  bigint,                          -- spike: reports in the hour at least;
                                                -- crash_free: sessions at least
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX alert_rules_kind ON alert_rules (project_id, kind);

CREATE TABLE alert_events (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),  -- the webhook's stable `id`
    rule_id      bigint NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    project_id   bigint NOT NULL,
    kind         text NOT NULL,                 -- the rule's kind when the event was made
    cause        text NOT NULL,                 -- what happened, one per rule:
                                                -- issue:<id>, regression:<id>:<time>,
                                                -- spike:<id>:<hour>, crash_free:<release>,
                                                -- callsite:<id>
    payload      jsonb NOT NULL,                -- the facts: issue, call site or release
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),  -- due for the next try
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (rule_id, cause)
);
CREATE INDEX alert_events_due ON alert_events (next_at) WHERE status = 'pending';
CREATE INDEX alert_events_failed ON alert_events (created_at) WHERE status = 'failed';

-- The facts an issue event carries: the top 3 signature frames (symbolicated names).
CREATE FUNCTION alerts_issue_facts(i issues) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', i.id, 'title', i.title, 'culprit', i.culprit, 'app', i.app,
        'kind', i.kind, 'count', i.count, 'versions', to_jsonb(i.versions),
        'frames', coalesce((SELECT jsonb_agg(f ORDER BY n) FROM jsonb_array_elements(i.frames)
                            WITH ORDINALITY AS t(f, n) WHERE n <= 3), '[]'::jsonb))
$$;

-- A new issue: one event per new_issue rule of its project, in the inserting transaction
-- (report intake's group commit or a worker's batch).
CREATE FUNCTION alerts_issue_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO alert_events (rule_id, project_id, kind, cause, payload)
    SELECT r.id, r.project_id, r.kind, 'issue:' || NEW.id,
           jsonb_build_object('issue', alerts_issue_facts(NEW))
      FROM alert_rules r
     WHERE r.kind = 'new_issue' AND r.project_id = NEW.project_id
    ON CONFLICT (rule_id, cause) DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER issues_alert_new AFTER INSERT ON issues
    FOR EACH ROW EXECUTE FUNCTION alerts_issue_inserted();

-- A regression: a resolved issue seen again in its fixed version or later reopens with a new
-- regressed_at (STORE_ISSUE_UPSERT_CONFLICT); one event per regression.
CREATE FUNCTION alerts_issue_regressed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO alert_events (rule_id, project_id, kind, cause, payload)
    SELECT r.id, r.project_id, r.kind,
           'regression:' || NEW.id || ':' || (extract(epoch FROM NEW.regressed_at) * 1000000)::bigint,
           jsonb_build_object('issue', alerts_issue_facts(NEW),
                              'resolved_in', OLD.resolved_in)
      FROM alert_rules r
     WHERE r.kind = 'regression' AND r.project_id = NEW.project_id
    ON CONFLICT (rule_id, cause) DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER issues_alert_regressed AFTER UPDATE ON issues
    FOR EACH ROW WHEN (NEW.regressed_at IS DISTINCT FROM OLD.regressed_at
                       AND NEW.regressed_at IS NOT NULL)
    EXECUTE FUNCTION alerts_issue_regressed();

-- A privacy-API call site first seen (its first build): one event per new_callsite rule.
CREATE FUNCTION alerts_callsite_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO alert_events (rule_id, project_id, kind, cause, payload)
    SELECT r.id, r.project_id, r.kind, 'callsite:' || NEW.id,
           jsonb_build_object('callsite', jsonb_build_object('id', NEW.id, 'app', NEW.app,
               'tag', NEW.tag, 'build', NEW.first_build,
               'frames', coalesce((SELECT jsonb_agg(f ORDER BY n)
                                   FROM jsonb_array_elements(NEW.frames) WITH ORDINALITY
                                   AS t(f, n) WHERE n <= 3), '[]'::jsonb)))
      FROM alert_rules r
     WHERE r.kind = 'new_callsite' AND r.project_id = NEW.project_id
    ON CONFLICT (rule_id, cause) DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER callsites_alert_new AFTER INSERT ON callsites
    FOR EACH ROW EXECUTE FUNCTION alerts_callsite_inserted();
