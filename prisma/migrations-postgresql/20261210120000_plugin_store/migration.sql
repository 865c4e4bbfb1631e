-- Plugin store (neon-parity, issue 11 point 7): registered nodes, shard intent and
-- generations of controller plugins live in the gateway's database.

-- CreateTable
CREATE TABLE "PluginNode" (
    "plugin" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "lifecycle" TEXT NOT NULL DEFAULT 'active',
    "attrs" TEXT NOT NULL DEFAULT '{}',
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PluginNode_pkey" PRIMARY KEY ("plugin","id")
);

-- CreateTable
CREATE TABLE "PluginShard" (
    "plugin" TEXT NOT NULL,
    "id" TEXT NOT NULL,
    "generation" INTEGER NOT NULL DEFAULT 0,
    "generationNodeId" TEXT,
    "intent" TEXT NOT NULL DEFAULT '{}',
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PluginShard_pkey" PRIMARY KEY ("plugin","id")
);

-- CreateTable
CREATE TABLE "PluginMeta" (
    "plugin" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "PluginMeta_pkey" PRIMARY KEY ("plugin","key")
);

-- CreateIndex
CREATE INDEX "PluginShard_plugin_generationNodeId_idx" ON "PluginShard"("plugin", "generationNodeId");
