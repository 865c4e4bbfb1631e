-- Rehearsals of rollouts (issue 33).

-- CreateTable
CREATE TABLE "Rehearsal" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" DATETIME,
    "actor" TEXT NOT NULL,
    "reason" TEXT,
    "input" TEXT NOT NULL,
    "samples" INTEGER NOT NULL,
    "seed" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "error" TEXT,
    "report" TEXT,
    "planBasis" TEXT NOT NULL,
    "snapshotTakenAt" DATETIME,
    "rolloutId" TEXT
);

-- CreateIndex
CREATE UNIQUE INDEX "Rehearsal_rolloutId_key" ON "Rehearsal"("rolloutId");

-- CreateIndex
CREATE INDEX "Rehearsal_state_idx" ON "Rehearsal"("state");

-- CreateIndex
CREATE INDEX "Rehearsal_createdAt_idx" ON "Rehearsal"("createdAt");
