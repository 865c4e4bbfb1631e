-- CreateTable
CREATE TABLE "NodeState" (
    "id" TEXT NOT NULL,
    "schedulingPolicy" TEXT NOT NULL DEFAULT 'ACTIVE',
    "maintenancePhase" TEXT,
    "maintenanceDeadline" TIMESTAMP(3),
    "maintenanceForce" BOOLEAN NOT NULL DEFAULT false,
    "maintenanceReason" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "NodeState_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Operation" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "nodeId" TEXT,
    "state" TEXT NOT NULL,
    "reason" TEXT,
    "actor" TEXT,
    "error" TEXT,
    "params" TEXT NOT NULL DEFAULT '{}',
    "counts" TEXT NOT NULL DEFAULT '{}',
    "waitingOn" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Operation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OperationStep" (
    "id" TEXT NOT NULL,
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
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),
    "detail" TEXT,

    CONSTRAINT "OperationStep_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Event" (
    "seq" SERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "type" TEXT NOT NULL,
    "nodeId" TEXT,
    "operationId" TEXT,
    "payload" TEXT NOT NULL DEFAULT '{}',

    CONSTRAINT "Event_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "arguments" TEXT NOT NULL DEFAULT '{}',
    "reason" TEXT,
    "outcome" TEXT NOT NULL,
    "nodeId" TEXT,

    CONSTRAINT "AuditEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiToken" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMP(3),
    "expiresAt" TIMESTAMP(3),
    "revoked" BOOLEAN NOT NULL DEFAULT false,
    "revokedAt" TIMESTAMP(3),
    "revokedBy" TEXT,

    CONSTRAINT "ApiToken_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VmTracking" (
    "vmId" TEXT NOT NULL,
    "nodeName" TEXT NOT NULL,
    "strategy" TEXT NOT NULL,
    "savedRunStrategy" TEXT,
    "recordedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "VmTracking_pkey" PRIMARY KEY ("vmId")
);

-- CreateTable
CREATE TABLE "LeaderLease" (
    "id" TEXT NOT NULL,
    "holder" TEXT,
    "address" TEXT,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "expiresAt" TIMESTAMP(3),
    "acquiredAt" TIMESTAMP(3),
    "renewedAt" TIMESTAMP(3),

    CONSTRAINT "LeaderLease_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Operation_nodeId_idx" ON "Operation"("nodeId");

-- CreateIndex
CREATE INDEX "Operation_state_idx" ON "Operation"("state");

-- CreateIndex
CREATE UNIQUE INDEX "OperationStep_operationId_workloadKind_workloadId_key" ON "OperationStep"("operationId", "workloadKind", "workloadId");

-- CreateIndex
CREATE INDEX "Event_at_idx" ON "Event"("at");

-- CreateIndex
CREATE INDEX "AuditEntry_at_idx" ON "AuditEntry"("at");

-- CreateIndex
CREATE INDEX "AuditEntry_actor_at_idx" ON "AuditEntry"("actor", "at");

-- CreateIndex
CREATE INDEX "AuditEntry_nodeId_at_idx" ON "AuditEntry"("nodeId", "at");

-- CreateIndex
CREATE UNIQUE INDEX "ApiToken_name_key" ON "ApiToken"("name");

-- CreateIndex
CREATE UNIQUE INDEX "ApiToken_tokenHash_key" ON "ApiToken"("tokenHash");

-- AddForeignKey
ALTER TABLE "OperationStep" ADD CONSTRAINT "OperationStep_operationId_fkey" FOREIGN KEY ("operationId") REFERENCES "Operation"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Fencing (ha:L3, ha:L7): the first statement of every transaction of the leader's
-- operations. It share-locks the lease row while it is still this holder's, at this epoch
-- and not expired by the database's clock (UTC, as Prisma stores timestamps), so that a
-- take-over (an UPDATE of that row) waits until the transaction has committed; otherwise
-- it raises LK001 and the whole transaction is rolled back.
CREATE FUNCTION lockkeeper_fence(p_holder TEXT, p_epoch INTEGER) RETURNS INTEGER LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM "LeaderLease"
        WHERE "id" = 'leader' AND "holder" = p_holder AND "epoch" = p_epoch AND "expiresAt" > (now() AT TIME ZONE 'UTC')
        FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'lockkeeper: % is not the leader at epoch % (lease lost or expired)', p_holder, p_epoch
            USING ERRCODE = 'LK001';
    END IF;
    RETURN p_epoch;
END
$$;
