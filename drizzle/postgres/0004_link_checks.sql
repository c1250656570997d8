CREATE TABLE "link_checks" (
	"id" text PRIMARY KEY NOT NULL,
	"message_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	"results_json" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "link_checks" ADD CONSTRAINT "link_checks_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "link_checks_by_message" ON "link_checks" USING btree ("message_id");