-- An operation's plan gets a table of its own (issue 15), as on SQLite
-- (migrations/20261210130000_operation_plan): it was kept in "Operation"."params", which is
-- rewritten at every update of the operation's progress columns (once per group commit).

-- CreateTable
CREATE TABLE "OperationPlan" (
    "operationId" TEXT NOT NULL,
    "plan" TEXT NOT NULL,

    CONSTRAINT "OperationPlan_pkey" PRIMARY KEY ("operationId")
);

-- AddForeignKey
ALTER TABLE "OperationPlan" ADD CONSTRAINT "OperationPlan_operationId_fkey" FOREIGN KEY ("operationId") REFERENCES "Operation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Move the plans of existing operations out of their params.
INSERT INTO "OperationPlan" ("operationId", "plan")
SELECT "id", ("params"::jsonb -> 'plan')::text FROM "Operation" WHERE jsonb_typeof("params"::jsonb -> 'plan') = 'array';
UPDATE "Operation" SET "params" = ("params"::jsonb - 'plan')::text WHERE "params"::jsonb ? 'plan';
