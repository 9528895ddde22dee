"""Schema v6: fewer statements inside a step's one round trip, and a run's status in one.

v5 (``step_sql``) made a step one call, but inside it each event was a call of a SQL
function (PostgreSQL 16 plans a SQL function with writes again at every call) that
updated the run's counter row once per event: a step that claims its next task wrote
that hot row three times. Measured per call on the S1 workload, ``orchestra_step`` took
0.8 ms on the server, of which the claim took 0.37 and each event 0.14.

Now:
- ``orchestra_claim_take`` claims exactly as v5's ``orchestra_claim`` did (expired
  leases first, then pending tasks, oldest first, per-role caps, ``SKIP LOCKED``) but
  writes no event: it returns each event it owes, in order, beside the claimed rows;
- ``orchestra_claim`` writes those events with one counter update per run
  (``orchestra_events``, runs in id order so two claimers lock them alike);
- ``orchestra_step`` puts its own events and its claim's in ONE update of the run's row,
  and, as SQLite's hand-in does, does not scan for expired leases when it claims the
  finished task's successor (the next ordinary claim takes those over);
- ``orchestra_set_run_status`` changes a run's status in one statement (the general
  path: begin, clock, lock, update, event, read, commit), except to ``cancelled``,
  which also cancels the run's tasks and keeps the general path;
- ``orchestra_create_run`` creates a run, its ``run.created`` event and its first
  tasks (without keys) with their ``task.created`` events in one statement.
"""

from __future__ import annotations

_LIVE_RUN = "ru.status IN ('pending', 'running', 'waiting')"

V6 = f"""
CREATE OR REPLACE FUNCTION orchestra_event(p_run text, p_kind text, p_data text,
                                           p_now double precision) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE v_seq bigint;
BEGIN
    UPDATE runs SET last_seq = last_seq + 1, updated_at = p_now WHERE id = p_run
    RETURNING last_seq INTO v_seq;
    INSERT INTO events (run_id, seq, kind, data, at) VALUES (p_run, v_seq, p_kind, p_data, p_now);
END $$;

-- a run's events in order, its counter row updated once (with a step's usage, if any)
CREATE FUNCTION orchestra_run_events(p_run text, p_kinds text[], p_datas text[],
                                     p_now double precision, p_tokens_in bigint,
                                     p_tokens_out bigint, p_cost double precision,
                                     p_steps integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    WITH s AS (
        UPDATE runs SET last_seq = last_seq + cardinality(p_kinds), updated_at = p_now,
            tokens_in = tokens_in + p_tokens_in, tokens_out = tokens_out + p_tokens_out,
            cost = cost + p_cost, steps = steps + p_steps
        WHERE id = p_run RETURNING last_seq)
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT p_run, s.last_seq - cardinality(p_kinds) + e.i, e.k, e.d, p_now
    FROM s, unnest(p_kinds, p_datas) WITH ORDINALITY AS e(k, d, i);
END $$;

-- events of any runs, each run's in order: one counter update per run, in id order
CREATE FUNCTION orchestra_events(p_runs text[], p_kinds text[], p_datas text[],
                                 p_now double precision) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_run text;
    v_kinds text[];
    v_datas text[];
BEGIN
    FOR v_run, v_kinds, v_datas IN
        SELECT e.r, array_agg(e.k ORDER BY e.i), array_agg(e.d ORDER BY e.i)
        FROM unnest(p_runs, p_kinds, p_datas) WITH ORDINALITY AS e(r, k, d, i)
        GROUP BY e.r ORDER BY e.r
    LOOP
        PERFORM orchestra_run_events(v_run, v_kinds, v_datas, p_now, 0, 0, 0, 0);
    END LOOP;
END $$;

-- v5's claim without its event writes: per event owed, in order, its run, kind and
-- data, and for each ``task.claimed`` the claimed task's row (``p_expired`` false:
-- pending tasks only, no takeover scan)
CREATE FUNCTION orchestra_claim_take(c_owner text, c_roles text[], c_caps integer[],
                                     c_limit integer, c_run text, c_lease double precision,
                                     p_now double precision, p_expired boolean)
RETURNS TABLE (o_run text, o_kind text, o_data text, o_task tasks)
LANGUAGE plpgsql AS $$
DECLARE
    v_roles text[] := c_roles;
    v_caps integer[] := c_caps;
    v_taken integer := 0;
    v_want integer;
    v_batch text[];
    v_got integer;
    v_row record;
    v tasks;
    k integer;
BEGIN
    WHILE cardinality(v_roles) > 0 AND v_taken < c_limit LOOP
        v_want := LEAST(c_limit - v_taken, (SELECT min(x) FROM unnest(v_caps) x));
        v_batch := '{{}}';
        v_got := 0;
        IF p_expired THEN
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
                    RETURNING tasks.id, tasks.run_id, tasks.role, tasks.attempt,
                        tasks.created_at, tasks.position, picked.lease_owner AS old_owner)
                SELECT * FROM upd ORDER BY created_at, position
            LOOP
                o_run := v_row.run_id;
                o_kind := 'task.requeued';
                o_data := json_build_object(
                    'task', v_row.id, 'role', v_row.role, 'attempt', v_row.attempt - 1,
                    'owner', v_row.old_owner, 'cause', 'lease expired')::text;
                o_task := NULL;
                RETURN NEXT;
                v_batch := v_batch || v_row.id;
            END LOOP;
        END IF;
        -- then pending tasks, claimed and read in the same statement, and the ones
        -- taken over above, read again: all of the batch, oldest first
        FOR v IN
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
                FROM picked WHERE tasks.id = picked.id RETURNING tasks.*)
            SELECT * FROM upd
            UNION ALL
            SELECT * FROM tasks WHERE id = ANY(v_batch)
            ORDER BY created_at, position
        LOOP
            o_run := v.run_id;
            o_kind := 'task.claimed';
            o_data := json_build_object('task', v.id, 'role', v.role, 'attempt', v.attempt,
                                        'owner', c_owner)::text;
            o_task := v;
            RETURN NEXT;
            v_got := v_got + 1;
            k := array_position(v_roles, v.role);
            v_caps[k] := v_caps[k] - 1;
            IF v_caps[k] = 0 THEN
                v_roles := v_roles[1:k - 1] || v_roles[k + 1:];
                v_caps := v_caps[1:k - 1] || v_caps[k + 1:];
            END IF;
        END LOOP;
        v_taken := v_taken + v_got;
        EXIT WHEN v_got < v_want;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION orchestra_claim(c_owner text, c_roles text[], c_caps integer[],
                                           c_limit integer, c_run text,
                                           c_lease double precision,
                                           p_now double precision) RETURNS SETOF tasks
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    w tasks;
    e_run text[] := '{{}}';
    e_kind text[] := '{{}}';
    e_data text[] := '{{}}';
BEGIN
    FOR r IN SELECT * FROM orchestra_claim_take(c_owner, c_roles, c_caps, c_limit, c_run,
                                                 c_lease, p_now, true)
    LOOP
        e_run := e_run || r.o_run;
        e_kind := e_kind || r.o_kind;
        e_data := e_data || r.o_data;
        IF r.o_kind = 'task.claimed' THEN
            w := r.o_task;
            RETURN NEXT w;
        END IF;
    END LOOP;
    IF cardinality(e_run) > 0 THEN
        PERFORM orchestra_events(e_run, e_kind, e_data, p_now);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION orchestra_step(
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
    w tasks;
    r record;
    v_n integer := coalesce(cardinality(m_role), 0);
    v_attempts integer;
    e_kind text[] := '{{}}';
    e_data text[] := '{{}}';
    x_run text[] := '{{}}';
    x_kind text[] := '{{}}';
    x_data text[] := '{{}}';
BEGIN
    SELECT * INTO v FROM tasks WHERE id = p_task FOR UPDATE;  -- orchestra_lease, inline
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OR002', MESSAGE = 'no task ' || p_task;
    END IF;
    IF v.status <> 'running' OR v.lease_owner IS DISTINCT FROM p_owner
            OR v.attempt <> p_attempt THEN
        RAISE EXCEPTION USING ERRCODE = 'OR001', MESSAGE = 'lease lost on ' || p_task,
            DETAIL = json_build_array(v.role, v.status, v.lease_owner, v.attempt)::text;
    END IF;
    IF coalesce(cardinality(h_id), 0) > 0 THEN
        INSERT INTO tasks (id, run_id, role, input, status, max_attempts, not_before,
                           parent_id, cause, "key", from_agent, handoff_note, created_at,
                           updated_at)
        SELECT h.t, v.run_id, h.r, h.i, 'pending', h.m, 0, p_task, 'handoff:' || h.h, NULL,
               p_agent, h.n, v_now, v_now
        FROM unnest(h_id, h_task, h_role, h_input, h_max, h_note) WITH ORDINALITY
            AS h(h, t, r, i, m, n, o)
        ORDER BY h.o;
        e_kind := e_kind || array_fill('handoff.posted'::text, ARRAY[cardinality(h_id)]);
        e_data := e_data || h_event;
    END IF;
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
    IF c_limit IS NOT NULL THEN
        FOR r IN SELECT * FROM orchestra_claim_take(c_owner, c_roles, c_caps, c_limit, c_run,
                                                     c_lease, v_now, false)
        LOOP
            IF r.o_run = v.run_id THEN
                e_kind := e_kind || r.o_kind;
                e_data := e_data || r.o_data;
            ELSE
                x_run := x_run || r.o_run;
                x_kind := x_kind || r.o_kind;
                x_data := x_data || r.o_data;
            END IF;
            IF r.o_kind = 'task.claimed' THEN
                w := r.o_task;
                RETURN NEXT w;
            END IF;
        END LOOP;
    END IF;
    -- the agent's and the run's counters (rows every writer of the run waits on) last:
    -- locked from here to the commit only
    IF v_n > 0 THEN
        WITH a AS (
            INSERT INTO agents (id, run_id, role, created_at, last_seq)
            VALUES (p_agent, v.run_id, p_agent_role, v_now, v_n)
            ON CONFLICT (id) DO UPDATE SET last_seq = agents.last_seq + excluded.last_seq
            RETURNING last_seq)
        INSERT INTO messages (agent_id, seq, task_id, role, content, tool_calls, tool_call_id,
                              name, created_at)
        SELECT p_agent, a.last_seq - v_n + m.i, p_task, m.r, m.c, m.calls, m.call_id, m.nm,
               v_now
        FROM a, unnest(m_role, m_content, m_calls, m_call_id, m_name)
            WITH ORDINALITY AS m(r, c, calls, call_id, nm, i);
    ELSE
        INSERT INTO agents (id, run_id, role, created_at, last_seq)
        VALUES (p_agent, v.run_id, p_agent_role, v_now, 0)
        ON CONFLICT (id) DO NOTHING;
    END IF;
    WITH s AS (  -- orchestra_run_events, inline
        UPDATE runs SET last_seq = last_seq + cardinality(e_kind), updated_at = v_now,
            tokens_in = tokens_in + p_tokens_in, tokens_out = tokens_out + p_tokens_out,
            cost = cost + p_cost, steps = steps + 1
        WHERE id = v.run_id RETURNING last_seq)
    INSERT INTO events (run_id, seq, kind, data, at)
    SELECT v.run_id, s.last_seq - cardinality(e_kind) + e.i, e.k, e.d, v_now
    FROM s, unnest(e_kind, e_data) WITH ORDINALITY AS e(k, d, i);
    IF cardinality(x_run) > 0 THEN
        PERFORM orchestra_events(x_run, x_kind, x_data, v_now);
    END IF;
END $$;

-- ``runs.set_run_status`` but to ``cancelled``: errors OR002 (no such run) and OR004
-- (not one of ``p_from``; detail: its status); the run's row out. The event's data is
-- ``p_head``, the previous status as JSON, ``p_tail`` (Python encodes the rest)
CREATE FUNCTION orchestra_set_run_status(p_run text, p_status text, p_error text,
                                         p_from text[], p_head text, p_tail text)
RETURNS SETOF runs
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := extract(epoch FROM now())::float8;
    v_current text;
    v runs;
BEGIN
    SELECT status INTO v_current FROM runs WHERE id = p_run FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OR002', MESSAGE = 'no run ' || p_run;
    END IF;
    IF p_from IS NOT NULL AND NOT v_current = ANY(p_from) THEN
        RAISE EXCEPTION USING ERRCODE = 'OR004', MESSAGE = 'run ' || p_run || ' is ' || v_current,
            DETAIL = v_current;
    END IF;
    UPDATE runs SET status = p_status, error = p_error, updated_at = v_now,
        last_seq = last_seq + 1
    WHERE id = p_run RETURNING * INTO v;
    INSERT INTO events (run_id, seq, kind, data, at)
    VALUES (p_run, v.last_seq, 'run.' || p_status,
            p_head || to_json(v_current)::text || p_tail, v_now);
    RETURN NEXT v;
END $$;

-- ``runs.create_run`` for tasks without keys: error OR005 if the id is taken; the
-- run's row out. Python encodes every payload and event and picks the task ids.
CREATE FUNCTION orchestra_create_run(p_run text, p_pipeline text, p_input text,
                                     p_event text, t_id text[], t_role text[],
                                     t_input text[], t_max integer[],
                                     t_not_before double precision[], t_parent text[],
                                     t_cause text[], t_event text[])
RETURNS SETOF runs
LANGUAGE plpgsql AS $$
DECLARE
    v_now double precision := extract(epoch FROM now())::float8;
    v_n integer := coalesce(cardinality(t_id), 0);
    v runs;
BEGIN
    INSERT INTO runs (id, pipeline, input, status, created_at, updated_at, last_seq)
    VALUES (p_run, p_pipeline, p_input, 'pending', v_now, v_now, 1 + v_n)
    ON CONFLICT (id) DO NOTHING
    RETURNING * INTO v;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'OR005', MESSAGE = 'run ' || p_run || ' exists';
    END IF;
    INSERT INTO events (run_id, seq, kind, data, at)
    VALUES (p_run, 1, 'run.created', p_event, v_now);
    IF v_n > 0 THEN
        INSERT INTO events (run_id, seq, kind, data, at)
        SELECT p_run, 1 + e.i, 'task.created', e.d, v_now
        FROM unnest(t_event) WITH ORDINALITY AS e(d, i);
        INSERT INTO tasks (id, run_id, role, input, status, max_attempts, not_before,
                           parent_id, cause, "key", from_agent, handoff_note, created_at,
                           updated_at)
        SELECT t.id, p_run, t.r, t.inp, 'pending', t.m, t.nb, t.par, t.ca, NULL, NULL, NULL,
               v_now, v_now
        FROM unnest(t_id, t_role, t_input, t_max, t_not_before, t_parent, t_cause)
            WITH ORDINALITY AS t(id, r, inp, m, nb, par, ca, o)
        ORDER BY t.o;
    END IF;
    RETURN NEXT v;
END $$;
"""
