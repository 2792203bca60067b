-- Privacy-API call sites: sample batches as accepted, the call sites workers count
-- them into, one row per (call site, build, UTC day) with its count and device set, and the
-- stacks that wait for a dSYM. Applied by `stacksift migrate` in one transaction; never edit
-- after merge.

-- One row per accepted POST /api/v1/samples, committed before the client gets its 202.
-- `canonical` is the batch with identical stacks merged (common/samplebatch); workers claim
-- status = 'received' rows with FOR UPDATE SKIP LOCKED and, in the transaction that adds the
-- batch's calls to the counts, set status = 'counted' and drop `canonical`: a batch is counted
-- exactly once. The row stays (small) so that a retried batch_id is recognized.
CREATE TABLE sample_batches (
    id          bigserial PRIMARY KEY,
    app         text NOT NULL,               -- app.bundle_id, else app.name
    batch_id    text,                        -- the client's id, NULL if it sent none
    sha256      text NOT NULL,               -- hex SHA-256 of the canonical batch
    received_at timestamptz NOT NULL DEFAULT now(),
    status      text NOT NULL DEFAULT 'received' CHECK (status IN ('received', 'counted')),
    build       text NOT NULL,
    device      text NOT NULL,
    samples     integer NOT NULL CHECK (samples > 0),
    calls       bigint NOT NULL CHECK (calls > 0),
    canonical   text,                        -- NULL once counted
    counted_at  timestamptz
);
CREATE UNIQUE INDEX sample_batches_batch_id ON sample_batches (app, batch_id)
    WHERE batch_id IS NOT NULL;
CREATE INDEX sample_batches_queue ON sample_batches (id) WHERE status = 'received';

-- A call site: an API tag plus the normalized names of the top in-app frames below the API
-- (common/signature's rules), per app. count, first/last_seen and first_build are kept by the
-- workers' upserts (ON CONFLICT DO UPDATE locks the row: exact under concurrency).
CREATE TABLE callsites (
    id          bigserial PRIMARY KEY,
    app         text NOT NULL,
    tag         text NOT NULL,
    key         text NOT NULL,               -- hex SHA-256 of tag and normalized frames
    frames      jsonb NOT NULL,              -- [{function, file, line, image}], top first
    stack       jsonb NOT NULL,              -- one symbolicated stack: [{function, file, line,
                                             --   image, in_app, inlined, address}]
    first_build text NOT NULL,               -- lowest build seen (version_key, then text)
    first_seen  timestamptz NOT NULL,        -- receive times
    last_seen   timestamptz NOT NULL,
    count       bigint NOT NULL CHECK (count >= 0),
    UNIQUE (app, tag, key)
);
CREATE INDEX callsites_first_build ON callsites (first_build);

-- Calls per call site, build and UTC day of receipt, with the devices that made them.
CREATE TABLE callsite_days (
    callsite_id bigint NOT NULL REFERENCES callsites (id) ON DELETE CASCADE,
    build       text NOT NULL,
    day         date NOT NULL,
    version     text NOT NULL,               -- app version of the build ('' if not sent)
    count       bigint NOT NULL CHECK (count > 0),
    devices     text[] NOT NULL,             -- distinct device ids, sorted
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    PRIMARY KEY (callsite_id, build, day)
);
CREATE INDEX callsite_days_build ON callsite_days (build, callsite_id);

-- Distinct stacks whose in-app images have no dSYM yet, with their counts and devices: kept
-- compactly, counted into callsite_days by a worker once a missing UUID gets a dSYM (the
-- dsyms trigger below marks them 'ready'; a periodic sweep is the safety net).
CREATE TABLE callsite_pending (
    id            bigserial PRIMARY KEY,
    app           text NOT NULL,
    stack_key     text NOT NULL,             -- hex SHA-256 of tag and (UUID, offset) frames
    build         text NOT NULL,
    day           date NOT NULL,
    version       text NOT NULL,
    status        text NOT NULL DEFAULT 'waiting' CHECK (status IN ('waiting', 'ready')),
    sample        text NOT NULL,             -- the stack as a one-sample canonical batch
    count         bigint NOT NULL CHECK (count > 0),
    devices       text[] NOT NULL,
    first_seen    timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL,
    missing_uuids uuid[] NOT NULL,
    UNIQUE (app, stack_key, build, day)
);
CREATE INDEX callsite_pending_ready ON callsite_pending (id) WHERE status = 'ready';
CREATE INDEX callsite_pending_missing ON callsite_pending USING gin (missing_uuids)
    WHERE status = 'waiting';

CREATE FUNCTION callsite_pending_release() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE callsite_pending SET status = 'ready'
     WHERE status = 'waiting' AND missing_uuids && ARRAY[NEW.uuid];
    RETURN NULL;
END
$$;
CREATE TRIGGER dsyms_release_callsites AFTER INSERT ON dsyms
    FOR EACH ROW EXECUTE FUNCTION callsite_pending_release();
