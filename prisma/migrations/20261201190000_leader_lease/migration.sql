-- CreateTable
CREATE TABLE "LeaderLease" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "holder" TEXT,
    "address" TEXT,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "expiresAt" DATETIME,
    "acquiredAt" DATETIME,
    "renewedAt" DATETIME
);
