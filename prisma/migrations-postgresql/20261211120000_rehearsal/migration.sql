-- Rehearsals of rollouts (issue 33), as on SQLite (migrations/20261211120000_rehearsal).

-- CreateTable
CREATE TABLE "Rehearsal" (
    "id" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),
    "actor" TEXT NOT NULL,
    "reason" TEXT,
    "input" TEXT NOT NULL,
    "samples" INTEGER NOT NULL,
    "seed" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "error" TEXT,
    "report" TEXT,
    "planBasis" TEXT NOT NULL,
    "snapshotTakenAt" TIMESTAMP(3),
    "rolloutId" TEXT,

    CONSTRAINT "Rehearsal_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Rehearsal_rolloutId_key" ON "Rehearsal"("rolloutId");

-- CreateIndex
CREATE INDEX "Rehearsal_state_idx" ON "Rehearsal"("state");

-- CreateIndex
CREATE INDEX "Rehearsal_createdAt_idx" ON "Rehearsal"("createdAt");
