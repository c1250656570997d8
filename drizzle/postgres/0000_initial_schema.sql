CREATE TABLE "api_keys" (
	"public_id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"secret_sha256" text NOT NULL,
	"name" text DEFAULT '' NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	"last_used_at" timestamp(3) with time zone,
	"revoked_at" timestamp(3) with time zone,
	"created_by" text
);
--> statement-breakpoint
CREATE TABLE "attachment_contents" (
	"attachment_id" text PRIMARY KEY NOT NULL,
	"content" "bytea" NOT NULL,
	"sha256" text
);
--> statement-breakpoint
CREATE TABLE "attachments" (
	"id" text PRIMARY KEY NOT NULL,
	"message_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"position" integer NOT NULL,
	"filename" text NOT NULL,
	"content_type" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"disposition" text NOT NULL,
	"content_id" text
);
--> statement-breakpoint
CREATE TABLE "audit_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "audit_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"organization_id" text,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text NOT NULL,
	"detail" text DEFAULT '' NOT NULL,
	"client_address" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_records" (
	"organization_id" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"request_fingerprint" text NOT NULL,
	"state" text NOT NULL,
	"response_body" text,
	"created_at" timestamp(3) with time zone NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL,
	CONSTRAINT "idempotency_records_organization_id_idempotency_key_pk" PRIMARY KEY("organization_id","idempotency_key")
);
--> statement-breakpoint
CREATE TABLE "inbound_bursts" (
	"subject_id" text NOT NULL,
	"bucket_starts_at" timestamp(3) with time zone NOT NULL,
	"accepted" integer NOT NULL,
	CONSTRAINT "inbound_bursts_subject_id_bucket_starts_at_pk" PRIMARY KEY("subject_id","bucket_starts_at")
);
--> statement-breakpoint
CREATE TABLE "inboxes" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"local_part" text NOT NULL,
	"address" text NOT NULL,
	"state" text NOT NULL,
	"routing_rule_id" text,
	"created_at" timestamp(3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "invites" (
	"token_sha256" text PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"organization_id" text NOT NULL,
	"role" text NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL,
	"used_at" timestamp(3) with time zone,
	CONSTRAINT "invites_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "memberships" (
	"organization_id" text NOT NULL,
	"user_id" text NOT NULL,
	"role" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	CONSTRAINT "memberships_organization_id_user_id_pk" PRIMARY KEY("organization_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "message_contents" (
	"message_id" text PRIMARY KEY NOT NULL,
	"text_body" text,
	"html_body" text,
	"headers_json" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "message_sources" (
	"message_id" text PRIMARY KEY NOT NULL,
	"raw" "bytea" NOT NULL,
	"sha256" text
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"inbox_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"from_name" text NOT NULL,
	"from_address" text NOT NULL,
	"to_address" text NOT NULL,
	"subject" text NOT NULL,
	"preview" text NOT NULL,
	"size_bytes" bigint NOT NULL,
	"received_at" timestamp(3) with time zone NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL,
	"search_subject" text NOT NULL,
	"search_sender" text NOT NULL,
	"search_sender_domain" text NOT NULL,
	"internet_message_id" text
);
--> statement-breakpoint
CREATE TABLE "monthly_email_usage" (
	"organization_id" text NOT NULL,
	"month" text NOT NULL,
	"received" integer NOT NULL,
	CONSTRAINT "monthly_email_usage_organization_id_month_pk" PRIMARY KEY("organization_id","month")
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	"limit_active_inboxes" integer,
	"limit_monthly_emails" integer,
	"limit_inbox_burst" integer,
	"limit_org_burst" integer,
	"limit_requests_per_key" integer,
	"limit_requests_per_org" integer,
	"limit_long_polls_per_key" integer,
	"limit_long_polls_per_org" integer
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"token_sha256" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL,
	"client_address" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"is_operator" boolean DEFAULT false NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	CONSTRAINT "users_email_unique" UNIQUE("email")
);
--> statement-breakpoint
CREATE TABLE "request_counts" (
	"subject_id" text NOT NULL,
	"minute_starts_at" timestamp(3) with time zone NOT NULL,
	"admitted" integer NOT NULL,
	CONSTRAINT "request_counts_subject_id_minute_starts_at_pk" PRIMARY KEY("subject_id","minute_starts_at")
);
--> statement-breakpoint
CREATE TABLE "slot_leases" (
	"id" text PRIMARY KEY NOT NULL,
	"subject_id" text NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp(3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachment_contents" ADD CONSTRAINT "attachment_contents_attachment_id_attachments_id_fk" FOREIGN KEY ("attachment_id") REFERENCES "public"."attachments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_events" ADD CONSTRAINT "audit_events_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "inboxes" ADD CONSTRAINT "inboxes_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invites" ADD CONSTRAINT "invites_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_contents" ADD CONSTRAINT "message_contents_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_sources" ADD CONSTRAINT "message_sources_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_inbox_id_inboxes_id_fk" FOREIGN KEY ("inbox_id") REFERENCES "public"."inboxes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "monthly_email_usage" ADD CONSTRAINT "monthly_email_usage_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_by_organization" ON "api_keys" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "attachments_by_message" ON "attachments" USING btree ("message_id","position");--> statement-breakpoint
CREATE INDEX "audit_events_by_organization" ON "audit_events" USING btree ("organization_id","id");--> statement-breakpoint
CREATE INDEX "idempotency_records_by_expiry" ON "idempotency_records" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "inbound_bursts_by_bucket" ON "inbound_bursts" USING btree ("bucket_starts_at");--> statement-breakpoint
CREATE UNIQUE INDEX "inboxes_local_part_unique" ON "inboxes" USING btree ("local_part");--> statement-breakpoint
CREATE INDEX "inboxes_by_organization_newest" ON "inboxes" USING btree ("organization_id","state","created_at","id");--> statement-breakpoint
CREATE INDEX "invites_by_organization" ON "invites" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "memberships_by_user" ON "memberships" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "messages_by_inbox_newest" ON "messages" USING btree ("inbox_id","received_at","id");--> statement-breakpoint
CREATE INDEX "messages_by_expiry" ON "messages" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "messages_by_organization_newest" ON "messages" USING btree ("organization_id","received_at","id");--> statement-breakpoint
CREATE INDEX "sessions_by_user" ON "sessions" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "sessions_by_expiry" ON "sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "request_counts_by_minute" ON "request_counts" USING btree ("minute_starts_at");--> statement-breakpoint
CREATE INDEX "slot_leases_by_subject" ON "slot_leases" USING btree ("subject_id","expires_at");--> statement-breakpoint
CREATE INDEX "slot_leases_by_holder" ON "slot_leases" USING btree ("holder");