CREATE TABLE "idem_records" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "idem_records_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"scope" text NOT NULL,
	"procedure" text NOT NULL,
	"key_hash" text NOT NULL,
	"fingerprint" text NOT NULL,
	"fingerprint_version" integer NOT NULL,
	"state" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"attempts" integer DEFAULT 1 NOT NULL,
	"recovery_point" text,
	"operation_id" uuid DEFAULT gen_random_uuid() NOT NULL,
	"response_status" integer,
	"response_body" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"completed_at" timestamp with time zone,
	"replay_expires_at" timestamp with time zone,
	"purge_after" timestamp with time zone,
	"superseded_at" timestamp with time zone,
	CONSTRAINT "idem_records_operation_id_unique" UNIQUE("operation_id"),
	CONSTRAINT "idem_records_state_check" CHECK ("idem_records"."state" IN ('PENDING', 'IN_PROGRESS', 'COMPLETED', 'RETRYABLE_FAILURE', 'TERMINAL_FAILURE', 'OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "idem_records_live_key_unique" ON "idem_records" USING btree ("scope","procedure","key_hash") WHERE "idem_records"."superseded_at" IS NULL;--> statement-breakpoint
CREATE INDEX "idem_records_expired_lease_idx" ON "idem_records" USING btree ("lease_expires_at") WHERE "idem_records"."state" = 'IN_PROGRESS';--> statement-breakpoint
CREATE INDEX "idem_records_purge_idx" ON "idem_records" USING btree ("purge_after") WHERE "idem_records"."state" IN ('COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE');