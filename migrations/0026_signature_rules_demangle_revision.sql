-- The demangler beside the grouping rules. Applied by `stacksift migrate` in one transaction;
-- never edit after merge.
--
-- Issues keep names as the demangler showed them when their reports were grouped (title,
-- culprit, signature frames), and the signature normalizes those names. When the demangler's
-- output changes (common/demangle's DEMANGLE_REVISION is raised), the stored reports are
-- regrouped as for new grouping rules (`stacksift migrate`, `stacksift regroup --if-needed`):
-- every stored name is made again by today's code. The names stored so far were made by
-- revision 1, the only one there has been.
ALTER TABLE signature_rules
    ADD COLUMN demangle_revision integer NOT NULL DEFAULT 1;  -- DEMANGLE_REVISION of the names
