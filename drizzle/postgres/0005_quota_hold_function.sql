-- The quota hold at RCPT TO as one statement: the application calls this function once per
-- recipient, where it sent seven (BEGIN, the setting, the lock, the tidy, the counts, the row,
-- COMMIT). Under the organisation's advisory lock (the key a store's re-check locks too), the
-- organisation's expired reservations are deleted, the stored usage plus the reservations left
-- are counted, and the row is inserted only when the monthly quota,
-- the inbox's burst and the organisation's burst all leave room. Returns NULL when held, else
-- the first limit without room, in the spec's order. The commit does not wait for its flush
-- (set_config(..., true) lasts to the end of the calling transaction): a hold lost to a crash
-- is checked again by the store under the same lock.
CREATE FUNCTION "pigeonhole_quota_hold"(
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
	month_used bigint;
	inbox_used bigint;
	organization_used bigint;
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
		coalesce((SELECT received FROM monthly_email_usage
			WHERE organization_id = p_organization_id AND month = p_month), 0)
		+ (SELECT count(*) FROM quota_reservations
			WHERE organization_id = p_organization_id AND month = p_month),
		coalesce((SELECT accepted FROM inbound_bursts
			WHERE subject_id = p_inbox_id AND bucket_starts_at = p_bucket_starts_at), 0)
		+ (SELECT count(*) FROM quota_reservations
			WHERE organization_id = p_organization_id AND inbox_id = p_inbox_id
				AND bucket_starts_at = p_bucket_starts_at),
		coalesce((SELECT accepted FROM inbound_bursts
			WHERE subject_id = p_organization_id AND bucket_starts_at = p_bucket_starts_at), 0)
		+ (SELECT count(*) FROM quota_reservations
			WHERE organization_id = p_organization_id AND bucket_starts_at = p_bucket_starts_at)
	INTO month_used, inbox_used, organization_used;
	IF month_used >= p_monthly_limit THEN RETURN 'monthly_quota_exceeded'; END IF;
	IF inbox_used >= p_inbox_limit THEN RETURN 'inbox_burst_exceeded'; END IF;
	IF organization_used >= p_organization_limit THEN RETURN 'organization_burst_exceeded'; END IF;
	INSERT INTO quota_reservations (id, organization_id, inbox_id, month, bucket_starts_at, holder, expires_at)
		VALUES (p_id, p_organization_id, p_inbox_id, p_month, p_bucket_starts_at, p_holder, p_expires_at);
	RETURN NULL;
END
$$;
