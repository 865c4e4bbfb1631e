-- ha:R2: admission of a start, a cancel or a configureNode by any replica, decided by the
-- database. The first statement of the admitting transaction: it takes a transaction-level
-- advisory lock ("LKAD") that every admission shares, so that admissions on all replicas are
-- serialised, and then checks, against what is committed, that the node has no running
-- operation of the kinds that conflict, that the cluster-wide limit is not reached and that
-- the node's policy and maintenance phase are still what the replica decided from. A refusal
-- raises, failing the whole transaction, with its own SQLSTATE (LK002 conflict, LK003 limit,
-- LK004 state changed). Each statement of a VOLATILE function sees what committed before it
-- ran, so the checks after the lock see every earlier admission.
CREATE FUNCTION lockkeeper_admit(
    p_node TEXT,
    p_conflicting_kinds TEXT,
    p_limit_kinds TEXT,
    p_limit INTEGER,
    p_policy TEXT,
    p_check_phase BOOLEAN,
    p_phase TEXT
) RETURNS INTEGER LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_running TEXT;
    v_count INTEGER;
    v_policy TEXT;
    v_phase TEXT;
BEGIN
    PERFORM pg_advisory_xact_lock(1280000324);
    SELECT "id" INTO v_running FROM "Operation"
        WHERE "nodeId" = p_node AND "state" IN ('RUNNING', 'CANCELLING', 'PAUSED')
          AND (p_conflicting_kinds IS NULL OR "kind" = ANY (string_to_array(p_conflicting_kinds, ',')))
        LIMIT 1;
    IF v_running IS NOT NULL THEN
        RAISE EXCEPTION 'lockkeeper admission: operation % already runs on node %', v_running, p_node
            USING ERRCODE = 'LK002', DETAIL = v_running;
    END IF;
    IF p_limit IS NOT NULL THEN
        SELECT count(*) INTO v_count FROM "Operation" o
            WHERE o."state" IN ('RUNNING', 'CANCELLING')
              AND (o."kind" = ANY (string_to_array(p_limit_kinds, ','))
                   -- a maintenance whose node drains its shards holds a storage slot (its part)
                   OR (o."kind" = 'MAINTENANCE' AND EXISTS (
                        SELECT 1 FROM "NodeState" n WHERE n."id" = o."nodeId" AND n."schedulingPolicy" = 'DRAINING')));
        IF v_count >= p_limit THEN
            RAISE EXCEPTION 'lockkeeper admission: the cluster already runs % node operation(s); the limit is %', v_count, p_limit
                USING ERRCODE = 'LK003', DETAIL = p_limit::text;
        END IF;
    END IF;
    SELECT "schedulingPolicy", "maintenancePhase" INTO v_policy, v_phase FROM "NodeState" WHERE "id" = p_node;
    IF p_policy IS NOT NULL AND coalesce(v_policy, 'ACTIVE') <> p_policy THEN
        RAISE EXCEPTION 'lockkeeper admission: node % has scheduling policy % now (another replica changed it)', p_node, coalesce(v_policy, 'ACTIVE')
            USING ERRCODE = 'LK004';
    END IF;
    IF p_check_phase AND v_phase IS DISTINCT FROM p_phase THEN
        RAISE EXCEPTION 'lockkeeper admission: node % is in maintenance phase % now (another replica changed it)', p_node, coalesce(v_phase, 'none')
            USING ERRCODE = 'LK004';
    END IF;
    RETURN 1;
END
$$;
