-- sentry-cli's chunked debug-file upload (`sentry-cli debug-files upload`): chunks, then an
-- assemble request per file. Applied by `stacksift migrate` in one transaction; never edit
-- after merge.
--
-- 1. upload_chunks: content-addressed by the SHA-1 of the uncompressed chunk (what the client
--    names each chunk by), stored as received (gzip or plain, verified before the INSERT).
--    Unassembled chunks are deleted once they are older than the expiry (ingest/assemble.c's
--    sweep); an assembled file no longer needs its chunks, so they simply age out too.
-- 2. dif_assemblies: one row per file (SHA-1 of the whole file) that an assemble request
--    started: its state as the client polls it, and what it became (a dsyms row).

CREATE TABLE upload_chunks (
    sha1       text PRIMARY KEY CHECK (sha1 ~ '^[0-9a-f]{40}$'),  -- of the uncompressed bytes
    gzip       boolean NOT NULL,          -- data is one gzip member of those bytes
    bytes      integer NOT NULL CHECK (bytes >= 0),              -- uncompressed size
    data       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Chunks are gzip or Mach-O: pglz would spend CPU for little.
ALTER TABLE upload_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE INDEX upload_chunks_created ON upload_chunks (created_at);

CREATE TABLE dif_assemblies (
    sha1       text PRIMARY KEY CHECK (sha1 ~ '^[0-9a-f]{40}$'),  -- of the whole file
    state      text NOT NULL CHECK (state IN ('assembling', 'ok', 'error')),
    detail     text,                      -- why, for 'error' (and notes for 'ok')
    name       text NOT NULL,             -- the file name the client gave
    project    text NOT NULL,             -- the project slug of the first request
    uuid       uuid,                      -- 'ok': the debug file recorded (dsyms.uuid)
    arch       text,
    has_dwarf  boolean,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dif_assemblies_updated ON dif_assemblies (updated_at);
