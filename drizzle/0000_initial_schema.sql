CREATE TABLE `api_keys` (
	`public_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`secret_sha256` text NOT NULL,
	`created_at` text NOT NULL,
	`last_used_at` text,
	`revoked_at` text,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `api_keys_by_organization` ON `api_keys` (`organization_id`);--> statement-breakpoint
CREATE TABLE `attachment_contents` (
	`attachment_id` text PRIMARY KEY NOT NULL,
	`content` blob NOT NULL,
	FOREIGN KEY (`attachment_id`) REFERENCES `attachments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`message_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`position` integer NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`disposition` text NOT NULL,
	`content_id` text,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `attachments_by_message` ON `attachments` (`message_id`,`position`);--> statement-breakpoint
CREATE TABLE `idempotency_records` (
	`organization_id` text NOT NULL,
	`idempotency_key` text NOT NULL,
	`request_fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`response_body` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `idempotency_key`),
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `idempotency_records_by_expiry` ON `idempotency_records` (`expires_at`);--> statement-breakpoint
CREATE TABLE `inbound_bursts` (
	`subject_id` text NOT NULL,
	`bucket_starts_at` text NOT NULL,
	`accepted` integer NOT NULL,
	PRIMARY KEY(`subject_id`, `bucket_starts_at`)
);
--> statement-breakpoint
CREATE INDEX `inbound_bursts_by_bucket` ON `inbound_bursts` (`bucket_starts_at`);--> statement-breakpoint
CREATE TABLE `inboxes` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`local_part` text NOT NULL,
	`address` text NOT NULL,
	`state` text NOT NULL,
	`routing_rule_id` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `inboxes_local_part_unique` ON `inboxes` (`local_part`);--> statement-breakpoint
CREATE INDEX `inboxes_by_organization_newest` ON `inboxes` (`organization_id`,`state`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `message_contents` (
	`message_id` text PRIMARY KEY NOT NULL,
	`text_body` text,
	`html_body` text,
	`headers_json` text NOT NULL,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `message_sources` (
	`message_id` text PRIMARY KEY NOT NULL,
	`raw` blob NOT NULL,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `messages` (
	`id` text PRIMARY KEY NOT NULL,
	`inbox_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`from_name` text NOT NULL,
	`from_address` text NOT NULL,
	`to_address` text NOT NULL,
	`subject` text NOT NULL,
	`preview` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`received_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`search_subject` text NOT NULL,
	`search_sender` text NOT NULL,
	`search_sender_domain` text NOT NULL,
	`internet_message_id` text,
	FOREIGN KEY (`inbox_id`) REFERENCES `inboxes`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `messages_by_inbox_newest` ON `messages` (`inbox_id`,`received_at`,`id`);--> statement-breakpoint
CREATE INDEX `messages_by_expiry` ON `messages` (`expires_at`);--> statement-breakpoint
CREATE TABLE `monthly_email_usage` (
	`organization_id` text NOT NULL,
	`month` text NOT NULL,
	`received` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `month`),
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `settings` (
	`name` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
