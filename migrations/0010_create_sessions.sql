-- Release health: sessions counted per project, release, environment and hour, the distinct
-- users of each release, and the state of each session still open to updates. Applied by
-- `stacksift migrate` in one transaction; never edit after merge.
--
-- Counting rules (Sentry's, server/ingest/sessions.h): a session counts once, when an update
-- with init arrives; exited, crashed and abnormal are final; errored = errors > 0 (or status
-- errored) and neither crashed nor abnormal; the release, environment, device and start of a
-- session are those of its first update; updates started more than 5 days ago are ignored.
-- Every session is counted in the UTC hour it started.

-- One row per (project, release, environment): the key every counter hangs off, with the
-- release's distinct users (devices) kept as counters beside their set (release_users).
CREATE TABLE release_envs (
    id            bigserial PRIMARY KEY,
    project_id    bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    release       text NOT NULL,
    environment   text NOT NULL,
    first_seen    timestamptz NOT NULL,          -- earliest session start
    last_seen     timestamptz NOT NULL,          -- latest session start
    user_rows     bigint NOT NULL DEFAULT 0,     -- rows in release_users
    crashed_rows  bigint NOT NULL DEFAULT 0,     -- of which crashed
    user_level    smallint NOT NULL DEFAULT 0,   -- 0: exact; k > 0: one device in 2^k kept
                                                 -- (those whose hash starts with k zero bits)
    UNIQUE (project_id, release, environment)
);

-- The devices (Sentry's `did`) of one release_envs row: 16 bytes of SHA-256(did). `lvl` is
-- the number of leading zero bits of the full hash (the sample a device belongs to when
-- the release has more than STACKSIFT_RELEASE_USERS_EXACT devices); `crashed` = one of its
-- counted sessions in this release crashed.
CREATE TABLE release_users (
    renv    bigint NOT NULL,                     -- release_envs.id (no foreign key: a
                                                 -- per-row trigger costs ~8 us a device)
    uid     uuid NOT NULL,
    lvl     smallint NOT NULL,
    crashed boolean NOT NULL DEFAULT false,
    PRIMARY KEY (renv, uid)
);

-- Counters per release_envs row and UTC hour of session start. errored never includes a
-- crashed or abnormal session (a session that errored and then crashed moves from errored
-- to crashed: the upsert adds -1 to errored, which is why the columns have no CHECK >= 0:
-- Postgres checks the proposed row of an INSERT ... ON CONFLICT before the conflict).
CREATE TABLE session_hours (
    renv     bigint NOT NULL,                    -- release_envs.id
    hour     timestamptz NOT NULL,
    sessions bigint NOT NULL DEFAULT 0,
    crashed  bigint NOT NULL DEFAULT 0,
    abnormal bigint NOT NULL DEFAULT 0,
    errored  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (renv, hour)
);
CREATE INDEX session_hours_hour ON session_hours (hour);

-- Each session while it may still receive updates (its start less than 5 days ago; retention
-- deletes older rows): what has been counted for it, so that a repeated or retried update
-- changes nothing. sid = 16 bytes of SHA-256 of the client's session id.
CREATE TABLE session_states (
    project_id bigint NOT NULL,
    sid        uuid NOT NULL,
    renv       bigint NOT NULL,                  -- release_envs.id, fixed by the first update
    uid        uuid,                             -- device, NULL when the session has none
    lvl        smallint NOT NULL DEFAULT 0,
    started    timestamptz NOT NULL,
    counted    boolean NOT NULL,                 -- an init update arrived
    errored    boolean NOT NULL,                 -- errors > 0 or status errored seen
    final      "char",                           -- NULL open, 'x' exited, 'c' crashed,
                                                 -- 'a' abnormal
    PRIMARY KEY (project_id, sid)
);
-- BRIN: sessions arrive roughly in start order, and retention only needs the old ranges.
CREATE INDEX session_states_started ON session_states USING brin (started);
