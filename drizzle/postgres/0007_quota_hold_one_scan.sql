-- The quota hold counts an organisation's reservations in one pass over its rows, where it made
-- three (the month, the inbox's bucket, the organisation's bucket), each over the same index
-- range. Every hold of a busy organisation walks that range, and until a vacuum removes them
-- it holds the index entries of every reservation deleted since (each stored message deletes
-- one), so the passes cost more than the rest of the hold. What is counted and decided is
-- unchanged (0005_quota_hold_function.sql).
CREATE OR REPLACE FUNCTION "pigeonhole_quota_hold"(
	p_id text,
	p_organization_id text,
	p_inbox_id text,
	p_month text,
	p_bucket_starts_at timestamptz,
	p_holder text,
	p_now timestamptz,
	p_expires_at timestamptz,
	p_monthly_limit bigint,
	p_inbox_limit bigint,
	p_organization_limit bigint
) RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
	month_held bigint;
	inbox_held bigint;
	organization_held bigint;
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	PERFORM pg_advisory_xact_lock(hashtextextended('pigeonhole.quota.' || p_organization_id, 0));
	-- SKIP LOCKED: an expired row another transaction has locked (a store converting it, a
	-- release) is left to it and counted below, as any unit in flight is; the hold never waits
	-- for a store, whose commit takes no lock a hold needs.
	DELETE FROM quota_reservations WHERE id IN (
		SELECT id FROM quota_reservations WHERE organization_id = p_organization_id AND expires_at <= p_now
		FOR UPDATE SKIP LOCKED);
	SELECT
		count(*) FILTER (WHERE month = p_month),
		count(*) FILTER (WHERE inbox_id = p_inbox_id AND bucket_starts_at = p_bucket_starts_at),
		count(*) FILTER (WHERE bucket_starts_at = p_bucket_starts_at)
	INTO month_held, inbox_held, organization_held
	FROM quota_reservations WHERE organization_id = p_organization_id;
	IF coalesce((SELECT received FROM monthly_email_usage
			WHERE organization_id = p_organization_id AND month = p_month), 0) + month_held >= p_monthly_limit THEN
		RETURN 'monthly_quota_exceeded';
	END IF;
	IF coalesce((SELECT accepted FROM inbound_bursts
			WHERE subject_id = p_inbox_id AND bucket_starts_at = p_bucket_starts_at), 0) + inbox_held >= p_inbox_limit THEN
		RETURN 'inbox_burst_exceeded';
	END IF;
	IF coalesce((SELECT accepted FROM inbound_bursts
			WHERE subject_id = p_organization_id AND bucket_starts_at = p_bucket_starts_at), 0)
			+ organization_held >= p_organization_limit THEN
		RETURN 'organization_burst_exceeded';
	END IF;
	INSERT INTO quota_reservations (id, organization_id, inbox_id, month, bucket_starts_at, holder, expires_at)
		VALUES (p_id, p_organization_id, p_inbox_id, p_month, p_bucket_starts_at, p_holder, p_expires_at);
	RETURN NULL;
END
$$;
