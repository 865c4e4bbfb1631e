-- CreateTable
CREATE TABLE "NodeState" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "schedulingPolicy" TEXT NOT NULL DEFAULT 'ACTIVE',
    "maintenancePhase" TEXT,
    "maintenanceDeadline" DATETIME,
    "maintenanceForce" BOOLEAN NOT NULL DEFAULT false,
    "maintenanceReason" TEXT,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "Operation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "nodeId" TEXT NOT NULL,
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

-- CreateTable
CREATE TABLE "OperationStep" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "operationId" TEXT NOT NULL,
    "workloadKind" TEXT NOT NULL,
    "workloadId" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "reason" TEXT,
    "error" TEXT,
    "fromNodeId" TEXT,
    "toNodeId" TEXT,
    "seq" INTEGER NOT NULL,
    "startedAt" DATETIME,
    "finishedAt" DATETIME,
    CONSTRAINT "OperationStep_operationId_fkey" FOREIGN KEY ("operationId") REFERENCES "Operation" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Event" (
    "seq" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "type" TEXT NOT NULL,
    "nodeId" TEXT,
    "operationId" TEXT,
    "payload" TEXT NOT NULL DEFAULT '{}'
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "arguments" TEXT NOT NULL DEFAULT '{}',
    "reason" TEXT,
    "outcome" TEXT NOT NULL,
    "nodeId" TEXT
);

-- CreateTable
CREATE TABLE "VmTracking" (
    "vmId" TEXT NOT NULL PRIMARY KEY,
    "nodeName" TEXT NOT NULL,
    "strategy" TEXT NOT NULL,
    "savedRunStrategy" TEXT,
    "recordedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "Operation_nodeId_idx" ON "Operation"("nodeId");

-- CreateIndex
CREATE INDEX "Operation_state_idx" ON "Operation"("state");

-- CreateIndex
CREATE UNIQUE INDEX "OperationStep_operationId_workloadKind_workloadId_key" ON "OperationStep"("operationId", "workloadKind", "workloadId");

-- CreateIndex
CREATE INDEX "Event_at_idx" ON "Event"("at");

