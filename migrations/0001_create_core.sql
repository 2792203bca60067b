-- The core tables of the service: API tokens, uploaded debug files, received reports.
-- Applied by `stacksift migrate` in one transaction; never edit after merge, add 0002_... instead.

-- API tokens. The token itself is never stored: "ss_<public_id>_<secret>" is shown once;
-- public_id finds the row, the SHA-256 of the whole token is compared in constant time.
CREATE TABLE tokens (
    id           bigserial PRIMARY KEY,
    public_id    text NOT NULL UNIQUE,
    token_sha256 bytea NOT NULL CHECK (length(token_sha256) = 32),
    name         text NOT NULL,
    scopes       text[] NOT NULL
                 CHECK (scopes <@ ARRAY['ingest', 'upload', 'read', 'admin']::text[]),
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);

-- One row per debug file (one Mach-O slice). Its symcache is DATA_DIR/symcaches/<UUID>.symc.
CREATE TABLE dsyms (
    uuid           uuid PRIMARY KEY,
    arch           text NOT NULL,
    name           text NOT NULL,            -- image name, e.g. "App" or "UIKitCore"
    has_dwarf      boolean NOT NULL,         -- false: built from the symbol table only
    dwarf_bytes    bigint NOT NULL,          -- size of the __DWARF sections
    symcache_bytes bigint NOT NULL,
    functions      integer NOT NULL,
    sha256         text NOT NULL,            -- hex SHA-256 of the symcache file
    uploaded_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dsyms_name ON dsyms (name);

-- Every accepted report, committed before the client gets its 202. The raw bytes are kept
-- (decompressed) so that a report can be reprocessed when a parser or a dSYM improves.
-- Workers claim status = 'received' rows with FOR UPDATE SKIP LOCKED (reports_queue);
-- 'pending_dsym' rows wait for the UUIDs in missing_uuids (reports_missing_uuids).
CREATE TABLE reports (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    received_at   timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    status        text NOT NULL DEFAULT 'received'
                  CHECK (status IN ('received', 'processed', 'pending_dsym', 'failed')),
    format        text NOT NULL,             -- 'apple-text', 'ips', 'kscrash', 'json'
    content_type  text NOT NULL,             -- as sent, without parameters
    raw           bytea NOT NULL,
    raw_bytes     integer NOT NULL,
    parsed        jsonb,                     -- the parsed model; NULL until parsed
    app           text,                      -- summary fields from the parsed model
    app_version   text,
    os_version    text,
    missing_uuids uuid[] NOT NULL DEFAULT '{}',
    error         text,                      -- why status = 'failed'
    attempts      integer NOT NULL DEFAULT 0
);
CREATE INDEX reports_queue ON reports (received_at) WHERE status = 'received';
CREATE INDEX reports_missing_uuids ON reports USING gin (missing_uuids) WHERE status = 'pending_dsym';
