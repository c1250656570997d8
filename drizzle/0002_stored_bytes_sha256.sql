ALTER TABLE `attachment_contents` ADD `sha256` text;--> statement-breakpoint
ALTER TABLE `message_sources` ADD `sha256` text;