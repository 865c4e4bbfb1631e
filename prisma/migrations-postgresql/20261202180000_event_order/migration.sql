-- ha:E1, ha:E2: the event log's seq must be its commit order. A seq is drawn from the sequence
-- when a row is inserted, not when it commits, so two transactions writing events at once
-- could commit out of seq order, and a reader that had passed the lower seq (still
-- uncommitted) would never deliver it. Every insert into "Event" first takes a
-- transaction-level advisory lock ("LKEV"), held until commit: transactions that write events
-- draw and commit their seqs one after another. The repositories take the same lock first
-- thing in each of their transactions (after the fence or the admission check), so that a
-- transaction never waits for it while holding the row locks another one waits on.
CREATE FUNCTION lockkeeper_event_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1280001366);
    RETURN NULL;
END
$$;

CREATE TRIGGER lockkeeper_event_order BEFORE INSERT ON "Event" FOR EACH STATEMENT EXECUTE FUNCTION lockkeeper_event_order();
