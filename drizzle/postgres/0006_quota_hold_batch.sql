-- Quota holds of one organisation, many in one call: a machine sends the holds that arrive
-- while its previous call for the organisation is running as one call of this function, where
-- each would have waited for the organisation's lock on a connection of its own and committed
-- alone. Each element is pigeonhole_quota_hold itself, in the order given, in one transaction
-- (the advisory lock is taken once and re-entered; each count sees the rows inserted before it),
-- so the answers are those of the same holds made one after the other. Returns one element per
-- hold: NULL when held, else the first limit without room. The commit does not wait for its
-- flush, as the single hold's does not.
CREATE FUNCTION "pigeonhole_quota_hold_many"(
	p_ids text[],
	p_organization_id text,
	p_inbox_ids text[],
	p_months text[],
	p_bucket_starts_at timestamptz[],
	p_holder text,
	p_nows timestamptz[],
	p_expires_at timestamptz[],
	p_monthly_limits bigint[],
	p_inbox_limits bigint[],
	p_organization_limits bigint[]
) RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
	refusals text[] := '{}';
BEGIN
	FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
		refusals := refusals || pigeonhole_quota_hold(p_ids[i], p_organization_id, p_inbox_ids[i], p_months[i],
			p_bucket_starts_at[i], p_holder, p_nows[i], p_expires_at[i], p_monthly_limits[i], p_inbox_limits[i],
			p_organization_limits[i]);
	END LOOP;
	RETURN refusals;
END
$$;
