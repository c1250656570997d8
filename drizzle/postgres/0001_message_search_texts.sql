-- Mirrors SQLite's message_search_texts (the console's text search; column comments in src/storage/schema.ts).
-- No backfill: PostgreSQL mode held no messages before this table existed.
CREATE TABLE "message_search_texts" (
	"message_id" text PRIMARY KEY NOT NULL,
	"text" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "message_search_texts" ADD CONSTRAINT "message_search_texts_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;