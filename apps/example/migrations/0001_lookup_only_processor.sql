DROP INDEX "processor_charges_operation_unique";--> statement-breakpoint
ALTER TABLE "processor_charges" ADD COLUMN "deduplicated" boolean DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX "processor_charges_operation_idx" ON "processor_charges" USING btree ("operation_id");--> statement-breakpoint
CREATE UNIQUE INDEX "processor_charges_operation_unique" ON "processor_charges" USING btree ("operation_id") WHERE "processor_charges"."deduplicated";