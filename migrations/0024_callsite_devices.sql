-- Distinct devices per call site, kept exact as calls are counted instead of counted over
-- every per-day device set on each read. Applied by `stacksift migrate` in one transaction;
-- never edit after merge.
--
-- GET /api/v1/callsites without a build or version filter showed each call site's devices
-- as count(DISTINCT ...) over the device arrays of all its callsite_days rows: 50-100 ms a
-- call at 135 call sites of 100 devices, growing with devices x builds x days. Now the
-- counting transaction adds each (call site, device) it counts to callsite_devices (ON
-- CONFLICT: no new row) and adds the rows it inserted to callsites.devices, in the same
-- transaction as the counts: exact, once. last_day is the latest day the device was counted
-- on, so retention, which drops callsite_days before a day, drops the devices last seen
-- before it and subtracts them: the figure stays the distinct devices of the kept days.
-- Filtered reads (build=, version=) still count the per-day device sets they select.
CREATE TABLE callsite_devices (
    callsite_id bigint NOT NULL REFERENCES callsites (id) ON DELETE CASCADE,
    device      text NOT NULL,
    last_day    date NOT NULL,               -- latest UTC day of receipt it was counted on
    PRIMARY KEY (callsite_id, device)
);
CREATE INDEX callsite_devices_last_day ON callsite_devices (last_day);

ALTER TABLE callsites ADD COLUMN devices bigint NOT NULL DEFAULT 0 CHECK (devices >= 0);

INSERT INTO callsite_devices (callsite_id, device, last_day)
SELECT d.callsite_id, x, max(d.day)
  FROM callsite_days d, unnest(d.devices) x
 GROUP BY d.callsite_id, x;

UPDATE callsites c SET devices = n.n
  FROM (SELECT callsite_id, count(*) AS n FROM callsite_devices GROUP BY callsite_id) n
 WHERE c.id = n.callsite_id;
