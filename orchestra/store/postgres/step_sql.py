"""Schema v5: a step's writes as server-side functions, so a step is one round trip.

``orchestra_step`` does inside PostgreSQL what ``journal.complete_task`` /
``complete_step`` and ``tasks.claim_many`` do statement by statement: the lease
check (the task's row locked), the agent's messages, the handoffs' tasks, the step's
journal row, its event and the run's totals, the task's end and the next claim, in
that order and with the same events. Called as one statement outside an explicit
transaction, it commits atomically on its own: no ``BEGIN``, no clock read, no
``COMMIT`` round trips, and the run's row (the per-run event counter) stays locked
only while the function runs on the server, not across the client's round trips.

Python still decides what only it can (each payload's encoding, size limit and
redaction, new ids, the data of the events it can know); errors come back as SQLSTATEs
``step`` turns into the same exceptions as the general path: ``OR001`` lease lost
(detail: role, status, owner, attempt as JSON), ``OR002`` no such task, ``OR003``
step already completed.
"""

from __future__ import annotations

_LIVE_RUN = "ru.status IN ('pending', 'running', 'waiting')"

V5 = f"""
CREATE FUNCTION orchestra_lease(p_task text, p_owner text, p_attempt integer) RETURNS tasks
LANGUAGE plpgsql AS $$
DECLARE v tasks;
BEGIN
    SELECT * INTO v FROM tasks WHERE id = p_task FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OR002', MESSAGE = 'no task ' || p_task;
    END IF;
    IF v.status <> 'running' OR v.lease_owner IS DISTINCT FROM p_owner
            OR v.attempt <> p_attempt THEN
        RAISE EXCEPTION USING ERRCODE = 'OR001', MESSAGE = 'lease lost on ' || p_task,
            DETAIL = json_build_array(v.role, v.status, v.lease_owner, v.attempt)::text;
    END IF;
    RETURN v;
END $$;

-- the event log's append: the run's counter row gives the gap-free seq
CREATE FUNCTION orchestra_event(p_run text, p_kind text, p_data text,
                                p_now double precision) RETURNS void
LANGUAGE sql AS $$
    WITH s AS (UPDATE runs SET last_seq = last_seq + 1, updated_at = p_now WHERE id = p_run
               RETURNING last_seq)
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT p_run, last_seq, p_kind, p_data, p_now FROM s
$$;

-- ``tasks.claim_many``: take over expired leases, then pending tasks, oldest first,
-- at most c_caps[i] of role c_roles[i] and c_limit in all
CREATE FUNCTION orchestra_claim(c_owner text, c_roles text[], c_caps integer[],
                                c_limit integer, c_run text, c_lease double precision,
                                p_now double precision) RETURNS SETOF tasks
LANGUAGE plpgsql AS $$
DECLARE
    v_roles text[] := c_roles;
    v_caps integer[] := c_caps;
    v_taken integer := 0;
    v_want integer;
    v_batch text[];
    v_more text[];
    v_row record;
    v tasks;
    k integer;
BEGIN
    WHILE cardinality(v_roles) > 0 AND v_taken < c_limit LOOP
        v_want := LEAST(c_limit - v_taken, (SELECT min(x) FROM unnest(v_caps) x));
        v_batch := '{{}}';
        FOR v_row IN
            WITH picked AS (
                SELECT tk.id, tk.lease_owner FROM tasks tk JOIN runs ru ON ru.id = tk.run_id
                WHERE tk.status = 'running' AND tk.lease_expires_at < p_now AND {_LIVE_RUN}
                  AND (c_run IS NULL OR tk.run_id = c_run) AND tk.role = ANY(v_roles)
                ORDER BY tk.created_at, tk.position LIMIT v_want
                FOR UPDATE OF tk SKIP LOCKED),
            upd AS (
                UPDATE tasks SET attempt = tasks.attempt + 1, lease_owner = c_owner,
                    lease_expires_at = p_now + c_lease, updated_at = p_now
                FROM picked WHERE tasks.id = picked.id
                RETURNING tasks.id, tasks.run_id, tasks.role, tasks.attempt, tasks.created_at,
                    tasks.position, picked.lease_owner AS old_owner)
            SELECT * FROM upd ORDER BY created_at, position
        LOOP
            PERFORM orchestra_event(v_row.run_id, 'task.requeued', json_build_object(
                'task', v_row.id, 'role', v_row.role, 'attempt', v_row.attempt - 1,
                'owner', v_row.old_owner, 'cause', 'lease expired')::text, p_now);
            v_batch := v_batch || v_row.id;
        END LOOP;
        IF cardinality(v_batch) < v_want THEN
            WITH picked AS (
                SELECT tk.id FROM tasks tk JOIN runs ru ON ru.id = tk.run_id
                WHERE tk.status = 'pending' AND tk.not_before <= p_now AND {_LIVE_RUN}
                  AND (c_run IS NULL OR tk.run_id = c_run) AND tk.role = ANY(v_roles)
                ORDER BY tk.created_at, tk.position LIMIT v_want - cardinality(v_batch)
                FOR UPDATE OF tk SKIP LOCKED),
            upd AS (
                UPDATE tasks SET status = 'running', attempt = tasks.attempt + 1,
                    lease_owner = c_owner, lease_expires_at = p_now + c_lease,
                    updated_at = p_now
                FROM picked WHERE tasks.id = picked.id RETURNING tasks.id)
            SELECT array_agg(id) INTO v_more FROM upd;
            v_batch := v_batch || coalesce(v_more, '{{}}');
        END IF;
        FOR v IN SELECT * FROM tasks WHERE id = ANY(v_batch) ORDER BY created_at, position
        LOOP
            PERFORM orchestra_event(v.run_id, 'task.claimed', json_build_object(
                'task', v.id, 'role', v.role, 'attempt', v.attempt, 'owner', c_owner)::text,
                p_now);
            RETURN NEXT v;
            k := array_position(v_roles, v.role);
            v_caps[k] := v_caps[k] - 1;
            IF v_caps[k] = 0 THEN
                v_roles := v_roles[1:k - 1] || v_roles[k + 1:];
                v_caps := v_caps[1:k - 1] || v_caps[k + 1:];
            END IF;
        END LOOP;
        v_taken := v_taken + cardinality(v_batch);
        EXIT WHEN cardinality(v_batch) < v_want;
    END LOOP;
END $$;

-- a step's end (``p_finish``: and its task's, then ``c_limit`` more claimed): rows out
-- are the finished task, then the claimed ones
CREATE FUNCTION orchestra_step(
    p_task text, p_owner text, p_attempt integer, p_agent text, p_agent_role text,
    p_retry integer, p_step integer, p_kind text, p_name text, p_digest text,
    p_output text, p_tokens_in bigint, p_tokens_out bigint, p_cost double precision,
    p_step_event text,
    m_role text[], m_content text[], m_calls text[], m_call_id text[], m_name text[],
    h_id text[], h_task text[], h_role text[], h_input text[], h_max integer[],
    h_note text[], h_event text[],
    p_finish boolean, p_result text,
    c_owner text, c_roles text[], c_caps integer[], c_limit integer, c_run text,
    c_lease double precision) RETURNS SETOF tasks
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := extract(epoch FROM now())::float8;
    v tasks;
    v_n integer := coalesce(cardinality(m_role), 0);
    v_last bigint;
    v_attempts integer;
    e_kind text[] := '{{}}';
    e_data text[] := '{{}}';
BEGIN
    v := orchestra_lease(p_task, p_owner, p_attempt);
    FOR i IN 1 .. coalesce(cardinality(h_id), 0) LOOP
        INSERT INTO tasks (id, run_id, role, input, status, max_attempts, not_before, parent_id,
                           cause, "key", from_agent, handoff_note, created_at, updated_at)
        VALUES (h_task[i], v.run_id, h_role[i], h_input[i], 'pending', h_max[i], 0, p_task,
                'handoff:' || h_id[i], NULL, p_agent, h_note[i], v_now, v_now);
        e_kind := e_kind || 'handoff.posted'::text;
        e_data := e_data || h_event[i];
    END LOOP;
    INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, output, error,
                       attempts, tokens_in, tokens_out, cost, started_at, finished_at)
    VALUES (p_task, p_retry, p_step, p_kind, p_name, p_digest, 'completed', p_output, NULL,
            CASE WHEN p_step = 1 THEN GREATEST(1, v.attempt - v.retry_attempt + 1) ELSE 1 END,
            p_tokens_in, p_tokens_out, p_cost, v_now, v_now)
    ON CONFLICT (task_id, retry, step) DO UPDATE SET
        kind = excluded.kind, name = excluded.name, input_digest = excluded.input_digest,
        status = excluded.status, output = excluded.output, error = excluded.error,
        tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost = excluded.cost,
        finished_at = excluded.finished_at
    WHERE steps.status <> 'completed'
    RETURNING attempts INTO v_attempts;
    IF v_attempts IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'OR003', MESSAGE = 'step already completed';
    END IF;
    e_kind := e_kind || 'step.completed'::text;
    e_data := e_data || p_step_event;
    IF p_finish THEN
        UPDATE tasks SET status = 'completed', result = p_result, error = NULL,
            lease_owner = NULL, lease_expires_at = NULL, updated_at = v_now
        WHERE id = p_task RETURNING * INTO v;
        e_kind := e_kind || 'task.completed'::text;
        e_data := e_data || json_build_object('task', p_task, 'role', v.role)::text;
        RETURN NEXT v;
    END IF;
    -- the agent's and the run's counters (rows every writer of the run waits on) last:
    -- locked from here to the commit only
    INSERT INTO agents (id, run_id, role, created_at, last_seq)
    VALUES (p_agent, v.run_id, p_agent_role, v_now, v_n)
    ON CONFLICT (id) DO UPDATE SET last_seq = agents.last_seq + excluded.last_seq
    RETURNING last_seq INTO v_last;
    IF v_n > 0 THEN
        INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id,
                              name, created_at)
        SELECT p_agent, v_last - v_n + m.i, p_task, m.r, m.c, m.calls, m.call_id, m.nm, v_now
        FROM unnest(m_role, m_content, m_calls, m_call_id, m_name)
            WITH ORDINALITY AS m(r, c, calls, call_id, nm, i);
    END IF;
    -- the step's events in one update of the run's counter row (with its totals)
    WITH s AS (
        UPDATE runs SET last_seq = last_seq + cardinality(e_kind), updated_at = v_now,
            tokens_in = tokens_in + p_tokens_in, tokens_out = tokens_out + p_tokens_out,
            cost = cost + p_cost, steps = steps + 1
        WHERE id = v.run_id RETURNING last_seq)
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT v.run_id, s.last_seq - cardinality(e_kind) + e.i, e.k, e.d, v_now
    FROM s, unnest(e_kind, e_data) WITH ORDINALITY AS e(k, d, i);
    IF c_limit IS NOT NULL THEN
        RETURN QUERY SELECT * FROM orchestra_claim(c_owner, c_roles, c_caps, c_limit, c_run,
                                                   c_lease, v_now);
    END IF;
END $$;

-- ``journal.start_step``: a step about to run (a restart counts one more attempt);
-- returns its attempts (NULL: it had already completed)
CREATE FUNCTION orchestra_start_step(p_task text, p_owner text, p_attempt integer,
                                     p_retry integer, p_step integer, p_kind text,
                                     p_name text, p_digest text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := extract(epoch FROM now())::float8;
    v tasks;
    v_attempts integer;
BEGIN
    v := orchestra_lease(p_task, p_owner, p_attempt);
    INSERT INTO steps (task_id, retry, step, kind, name, input_digest, status, attempts,
                       started_at)
    VALUES (p_task, p_retry, p_step, p_kind, p_name, p_digest, 'started',
            CASE WHEN p_step = 1 THEN GREATEST(1, v.attempt - v.retry_attempt + 1) ELSE 1 END,
            v_now)
    ON CONFLICT (task_id, retry, step) DO UPDATE SET
        attempts = steps.attempts + 1, status = 'started', kind = excluded.kind,
        name = excluded.name, input_digest = excluded.input_digest,
        started_at = excluded.started_at, output = NULL, error = NULL, finished_at = NULL
    WHERE steps.status <> 'completed'
    RETURNING attempts INTO v_attempts;
    IF v_attempts IS NOT NULL AND p_kind <> 'model' THEN
        PERFORM orchestra_event(v.run_id, 'step.started', json_build_object(
            'task', p_task, 'step', p_step, 'kind', p_kind, 'name', p_name,
            'attempt', v_attempts)::text, v_now);
    END IF;
    RETURN v_attempts;
END $$;
"""
