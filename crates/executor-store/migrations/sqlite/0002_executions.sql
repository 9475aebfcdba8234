-- Executor store, schema version 2: durable executions.
-- An execution row is written lazily: when it first pauses, or once when it settles, so an
-- execution that never pauses costs one insert. `execution_call` is its journal: every host call
-- in issue order, arguments redacted, and the reply the sandbox got, so that a paused execution
-- can be re-run after a restart with its earlier calls answered from here.

CREATE TABLE execution (
    id           TEXT    PRIMARY KEY NOT NULL,
    tenant       TEXT    NOT NULL,
    subject      TEXT    NOT NULL DEFAULT '',
    code         TEXT    NOT NULL,
    auto_approve INTEGER NOT NULL DEFAULT 0,
    status       TEXT    NOT NULL
                 CHECK (status IN ('running', 'paused', 'completed', 'failed', 'expired')),
    -- The seed of Math.random (u64 stored as its i64 bit pattern).
    seed         INTEGER NOT NULL,
    started_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    finished_at  INTEGER,
    expires_at   INTEGER,
    duration_ms  INTEGER,
    tool_calls   INTEGER NOT NULL DEFAULT 0,
    -- JSON array of the clock values handed to the code (Date.now and friends), in order.
    clock        TEXT    NOT NULL DEFAULT '[]',
    -- The pending interaction of a paused execution.
    pending      TEXT,
    -- The final {text, structured, isError}.
    outcome      TEXT
) WITHOUT ROWID;

CREATE INDEX execution_recent ON execution (tenant, subject, started_at DESC);
CREATE INDEX execution_status ON execution (status, expires_at);

CREATE TABLE execution_call (
    execution_id TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    path         TEXT    NOT NULL,
    -- Arguments with secret-looking values masked.
    args         TEXT    NOT NULL DEFAULT 'null',
    -- Salted SHA-256 of the unredacted arguments: replay matches calls on it.
    args_hash    TEXT    NOT NULL,
    -- {"resolve": value} | {"reject": message}; NULL while the call is in flight.
    outcome      TEXT,
    -- The approval interaction when this call paused the execution.
    pause        TEXT,
    started_at   INTEGER NOT NULL,
    duration_ms  INTEGER,
    PRIMARY KEY (execution_id, seq)
) WITHOUT ROWID;
