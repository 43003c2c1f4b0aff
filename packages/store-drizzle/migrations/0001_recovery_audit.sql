CREATE TABLE "idem_audit" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "idem_audit_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"record_id" bigint NOT NULL,
	"operation_id" uuid NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"from_state" text NOT NULL,
	"to_state" text NOT NULL,
	"from_version" integer NOT NULL,
	"note" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "idem_records" ADD COLUMN "input_text" text;--> statement-breakpoint
ALTER TABLE "idem_records" ADD COLUMN "steps" text;--> statement-breakpoint
ALTER TABLE "idem_records" ADD COLUMN "irreversible_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "idem_records" ADD COLUMN "erased_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "idem_audit_record_id_idx" ON "idem_audit" USING btree ("record_id");--> statement-breakpoint
CREATE INDEX "idem_audit_operation_id_idx" ON "idem_audit" USING btree ("operation_id");--> statement-breakpoint
CREATE INDEX "idem_records_attention_idx" ON "idem_records" USING btree ("state","updated_at") WHERE "idem_records"."state" IN ('PENDING', 'OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION');--> statement-breakpoint
CREATE INDEX "idem_records_superseded_scope_idx" ON "idem_records" USING btree ("scope") WHERE "idem_records"."superseded_at" IS NOT NULL;