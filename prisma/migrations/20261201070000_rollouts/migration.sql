-- Rollouts (spec rollouts): a ROLLOUT operation has no node of its own, and its steps
-- (one per node) keep their phase and node operations in `detail`.

-- AlterTable
ALTER TABLE "OperationStep" ADD COLUMN "detail" TEXT;

-- RedefineTables
CREATE TABLE "new_Operation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "nodeId" TEXT,
    "state" TEXT NOT NULL,
    "reason" TEXT,
    "actor" TEXT,
    "error" TEXT,
    "params" TEXT NOT NULL DEFAULT '{}',
    "counts" TEXT NOT NULL DEFAULT '{}',
    "waitingOn" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" DATETIME,
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_Operation" ("id", "kind", "nodeId", "state", "reason", "actor", "error", "params", "counts", "waitingOn", "createdAt", "startedAt", "finishedAt", "updatedAt")
SELECT "id", "kind", "nodeId", "state", "reason", "actor", "error", "params", "counts", "waitingOn", "createdAt", "startedAt", "finishedAt", "updatedAt" FROM "Operation";
DROP TABLE "Operation";
ALTER TABLE "new_Operation" RENAME TO "Operation";
CREATE INDEX "Operation_nodeId_idx" ON "Operation"("nodeId");
CREATE INDEX "Operation_state_idx" ON "Operation"("state");
