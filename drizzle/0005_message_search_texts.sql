-- The console's text search reads this short lowercased copy of each message's text, never the bodies (see src/core/inbound/store.ts).
CREATE TABLE `message_search_texts` (
	`message_id` text PRIMARY KEY NOT NULL,
	`text` text NOT NULL,
	FOREIGN KEY (`message_id`) REFERENCES `messages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Messages stored before this table existed: their text part (else the preview), lowercased by SQLite (ASCII letters only), first 4000 characters.
INSERT INTO `message_search_texts` (`message_id`, `text`)
SELECT `c`.`message_id`, lower(substr(coalesce(`c`.`text_body`, `m`.`preview`), 1, 4000))
FROM `message_contents` `c` JOIN `messages` `m` ON `m`.`id` = `c`.`message_id`;
