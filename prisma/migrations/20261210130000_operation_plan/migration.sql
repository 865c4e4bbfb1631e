-- An operation's plan gets a table of its own (issue 15): it was kept in
-- "Operation"."params", and SQLite rewrites a whole row, plan included, at every update of
-- the operation's progress columns (once per group commit while it runs).

-- CreateTable
CREATE TABLE "OperationPlan" (
    "operationId" TEXT NOT NULL PRIMARY KEY,
    "plan" TEXT NOT NULL,
    CONSTRAINT "OperationPlan_operationId_fkey" FOREIGN KEY ("operationId") REFERENCES "Operation" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- Move the plans of existing operations out of their params.
INSERT INTO "OperationPlan" ("operationId", "plan")
SELECT "id", json_extract("params", '$.plan') FROM "Operation" WHERE json_type("params", '$.plan') = 'array';
UPDATE "Operation" SET "params" = json_remove("params", '$.plan') WHERE json_type("params", '$.plan') IS NOT NULL;
