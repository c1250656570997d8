CREATE TABLE "idempotency_leases" (
	"organization_id" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"claim_id" text NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL,
	CONSTRAINT "idempotency_leases_organization_id_idempotency_key_pk" PRIMARY KEY("organization_id","idempotency_key")
);
--> statement-breakpoint
CREATE TABLE "quota_reservations" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"inbox_id" text NOT NULL,
	"month" text NOT NULL,
	"bucket_starts_at" timestamp(3) with time zone NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sign_in_failures" (
	"slot" text PRIMARY KEY NOT NULL,
	"credential" text NOT NULL,
	"failures" integer NOT NULL,
	"window_ends_at" timestamp(3) with time zone NOT NULL,
	"next_check_at" timestamp(3) with time zone
);
--> statement-breakpoint
CREATE INDEX "idempotency_leases_by_holder" ON "idempotency_leases" USING btree ("holder");--> statement-breakpoint
CREATE INDEX "quota_reservations_by_organization" ON "quota_reservations" USING btree ("organization_id","expires_at");--> statement-breakpoint
CREATE INDEX "quota_reservations_by_holder" ON "quota_reservations" USING btree ("holder");--> statement-breakpoint
CREATE INDEX "sign_in_failures_by_window" ON "sign_in_failures" USING btree ("window_ends_at");