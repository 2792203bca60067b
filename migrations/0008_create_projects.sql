-- Projects and DSN keys. Applied by `stacksift migrate` in one transaction; never edit after
-- merge.
--
-- A project is what a team configures an SDK for: reports, issues and call sites belong to
-- one, and grouping is per project (the same crash in two projects is two issues). Every row
-- that exists when this runs moves to the default project (id 1, slug 'default'), which is
-- also where a report goes when its route names no project (POST /api/v1/reports with a
-- bearer token): existing clients keep working unchanged.

CREATE TABLE projects (
    id         bigserial PRIMARY KEY,
    slug       text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO projects (id, slug, name) VALUES (1, 'default', 'Default');
SELECT setval('projects_id_seq', 1);   -- the next project created gets id 2

-- DSN keys: ingest-only credentials of one project. A key (32 hex digits, the user part of
-- the DSN http://KEY@HOST/ID) is never stored: only its SHA-256, which also finds the row.
-- A current key has no expiry; rotating a project's key gives its current ones an expiry
-- (the grace period, during which SDKs still sending them keep working) and adds a new one.
CREATE TABLE dsn_keys (
    id         bigserial PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key_sha256 bytea NOT NULL UNIQUE CHECK (length(key_sha256) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz                -- NULL: current; else accepted until then
);
CREATE INDEX dsn_keys_project ON dsn_keys (project_id);

-- reports is partitioned (0006): the column and its foreign key recurse to every partition,
-- and partitions made later (stacksift_reports_partition_create: LIKE reports, then ATTACH)
-- get both. A constant default: no table rewrite.
ALTER TABLE reports
    ADD COLUMN project_id bigint NOT NULL DEFAULT 1 REFERENCES projects (id);

-- Issues are keyed by (project, app, fingerprint): grouping is per project.
ALTER TABLE issues
    ADD COLUMN project_id bigint NOT NULL DEFAULT 1 REFERENCES projects (id);
ALTER TABLE issues DROP CONSTRAINT issues_app_fingerprint_key;
ALTER TABLE issues ADD CONSTRAINT issues_project_app_fingerprint_key
    UNIQUE (project_id, app, fingerprint);
CREATE INDEX issues_project_last_seen ON issues (project_id, last_seen, id);

-- Call sites (0005) likewise: sample batches, call sites and waiting stacks per project.
ALTER TABLE sample_batches
    ADD COLUMN project_id bigint NOT NULL DEFAULT 1 REFERENCES projects (id);
DROP INDEX sample_batches_batch_id;
CREATE UNIQUE INDEX sample_batches_batch_id ON sample_batches (project_id, app, batch_id)
    WHERE batch_id IS NOT NULL;

ALTER TABLE callsites
    ADD COLUMN project_id bigint NOT NULL DEFAULT 1 REFERENCES projects (id);
ALTER TABLE callsites DROP CONSTRAINT callsites_app_tag_key_key;
ALTER TABLE callsites ADD CONSTRAINT callsites_project_app_tag_key_key
    UNIQUE (project_id, app, tag, key);

ALTER TABLE callsite_pending
    ADD COLUMN project_id bigint NOT NULL DEFAULT 1 REFERENCES projects (id);
ALTER TABLE callsite_pending DROP CONSTRAINT callsite_pending_app_stack_key_build_day_key;
ALTER TABLE callsite_pending ADD CONSTRAINT callsite_pending_project_key
    UNIQUE (project_id, app, stack_key, build, day);
