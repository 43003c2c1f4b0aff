ALTER TABLE "idem_records" ADD COLUMN "takeover_after" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "idem_records" ADD COLUMN "takeovers" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "idem_records" ADD COLUMN "reconcile_reason" text;