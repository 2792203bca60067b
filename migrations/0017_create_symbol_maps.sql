-- App Store (bitcode) dSYMs: the two files that reveal their `__hidden#N_` names.
--
-- A dSYM from App Store Connect names its functions and files `__hidden#N_`; its UUID map
-- (Contents/Resources/<UUID>.plist) names the archived build (DBGOriginalUUID), whose
-- BCSymbolMap (BCSymbolMaps/<UUID>.bcsymbolmap) holds string N on line N. A symcache is built
-- revealed when both are stored; whichever of the three arrives last, the hidden dSYMs it
-- completes are rebuilt from their stored upload and the reports waiting for them released.

-- One row per App Store dSYM slice with a UUID map.
CREATE TABLE uuid_maps (
    uuid          uuid PRIMARY KEY,         -- the dSYM slice
    original_uuid uuid NOT NULL,            -- DBGOriginalUUID: the build the developer archived
    uploaded_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX uuid_maps_original ON uuid_maps (original_uuid);

-- One row per BCSymbolMap; its bytes are a blob (content-addressed, like uploads).
CREATE TABLE symbol_maps (
    uuid        uuid PRIMARY KEY,           -- the archived build it belongs to
    names       integer NOT NULL CHECK (names >= 0),  -- lines after the header
    bytes       bigint NOT NULL CHECK (bytes >= 0),
    blob        text NOT NULL REFERENCES blobs (sha256) DEFERRABLE INITIALLY DEFERRED,
    uploaded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX symbol_maps_blob ON symbol_maps (blob);

-- What a dSYM's symcache still hides: 0 for every dSYM not from App Store Connect.
ALTER TABLE dsyms
    ADD COLUMN hidden_names integer NOT NULL DEFAULT 0,  -- names and paths left `__hidden#N_`
    ADD COLUMN hidden_max   integer NOT NULL DEFAULT 0,  -- largest N + 1: lines its map needs
    ADD COLUMN revealed_by  uuid;                        -- the BCSymbolMap its symcache used
