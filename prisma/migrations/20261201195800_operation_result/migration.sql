-- What an ended drain or maintenance left on its node that would lose service if the node
-- restarted (issue 17, "done means safe"): JSON {"remaining": [...]}, null otherwise.

-- AlterTable
ALTER TABLE "Operation" ADD COLUMN "result" TEXT;
