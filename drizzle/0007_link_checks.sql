CREATE TABLE `link_checks` (
	`id` text PRIMARY KEY NOT NULL,
	`message_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`created_at` text NOT NULL,
	`results_json` text NOT NULL,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `link_checks_by_message` ON `link_checks` (`message_id`);