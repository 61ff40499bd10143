"""The team archive's PostgreSQL schema, created and migrated by the tool.

Invariants:

* Migrations are named (``pNNN_<what>``), ordered, append-only and never edited; each runs
  in one transaction with its row in ``schema_migrations`` (the schema's own table), under
  an advisory lock, so two machines pushing for the first time at once migrate once.
* The tables mirror the local archive's canonical layer (archive/migrations.py) with the
  machine in every source-derived key: a row from a line is keyed on ``(machine_id,
  source_uid, generation, offset[, sub])``; canonical rows (``threads``, ``messages``,
  ``blocks``, ``usage``, ``blobs``) on their canonical ids, stored once whatever the number
  of machines that have them.
* Ownership is the local rule made machine-wide: a message belongs to the copy in the
  thread created first (``messages.thread_created_at``, then the thread id), then to the
  smallest ``(source_uid, generation, offset, sub, machine_id)`` (p020; before it, the
  smallest ``(machine_id, source_no, ...)``, which let a fork pushed before its original
  keep the team copy); a usage row to its largest key, with the thread of its message's
  owner; a thread row to the smallest machine id that has it, its fork lineage derived on
  the server (``thread_lineage``). Whatever order machines push in, the tables end the
  same. A thread's messages are still ordered by their owner's ``(machine_id, source_no,
  generation, offset, sub)``.
* JSON columns are ``json`` (the text as the local archive holds it, key order kept), not
  ``jsonb``; PostgreSQL text cannot hold NUL characters, so a NUL in a text column arrives
  as U+FFFD; a block's seed field keeps its exact value in ``blocks.extra``, which the
  loaders lay over the columns (``archive.pg.nul_safe_block``), and ``source_lines`` keeps
  the exact bytes.
* Views have the local views' names and meaning (usage columns are the four disjoint
  buckets as stored, no per-provider arithmetic), each with ``machine_id`` where a row comes
  from one machine.
* ``blocks.tsv`` is the full-text vector of the block's first 100,000 characters
  (PostgreSQL's ``simple`` configuration: no stemming, any language), GIN-indexed.
"""

from __future__ import annotations

from typing import Any

MIGRATIONS_TABLE = "schema_migrations"
FTS_CHARS = 100_000

P001_INITIAL = f"""
CREATE TABLE machines (
    id text PRIMARY KEY,                 -- the local archive's push_machine.id
    name text,                           -- --machine, default the host name
    first_push_at timestamptz,
    last_push_at timestamptz,
    blobs_upto bigint NOT NULL DEFAULT 0,   -- local blobs rowid sent up to (blobs are never deleted)
    rebuild_upto bigint NOT NULL DEFAULT 0  -- local ingest_runs id of the last rebuild sent
);

-- 1. Source layer, per machine
CREATE TABLE sources (
    machine_id text NOT NULL,
    uid text NOT NULL,                   -- the local sources.uid
    source_no bigint NOT NULL,           -- the local sources.id (order of arrival on that machine)
    provider text NOT NULL,
    kind text NOT NULL,
    current_generation integer NOT NULL,
    first_path text,
    last_path text,
    PRIMARY KEY (machine_id, uid)
);
CREATE TABLE generations (
    machine_id text NOT NULL,
    source_uid text NOT NULL,
    generation integer NOT NULL,
    end_offset bigint NOT NULL,          -- the push watermark: every row from a line before it is here
    line_count bigint NOT NULL DEFAULT 0,
    last_line_offset bigint,
    last_line_sha text,
    content_sha256 text,
    lines_end bigint,                    -- --with-sources: source_lines sent up to here (NULL: none)
    lines_from bigint,                   -- ... and sent again from here next time (a last line's newline may come later)
    PRIMARY KEY (machine_id, source_uid, generation)
);
CREATE TABLE source_lines (             -- only with push --with-sources
    machine_id text NOT NULL,
    source_uid text NOT NULL,
    generation integer NOT NULL,
    "offset" bigint NOT NULL,
    length integer NOT NULL,
    terminated integer NOT NULL,
    data bytea NOT NULL,                 -- the line's exact bytes, without the newline
    PRIMARY KEY (machine_id, source_uid, generation, "offset")
);

-- 2. Canonical projection
CREATE TABLE threads (
    id text PRIMARY KEY,
    machine_id text NOT NULL,            -- the machine whose fold this row is (smallest id that has it)
    provider text,
    agent_id text,
    parent_thread_id text,
    origin_message_id text,
    title text,
    created_at text,
    cwd text,
    model text,
    metadata json,
    extra json
);
CREATE TABLE machine_threads (          -- which machine has which thread; digest of its local row
    machine_id text NOT NULL,
    thread_id text NOT NULL,
    digest text NOT NULL,
    PRIMARY KEY (machine_id, thread_id)
);
CREATE TABLE thread_facts (
    machine_id text NOT NULL,
    source_uid text NOT NULL,
    generation integer NOT NULL,
    "offset" bigint NOT NULL,
    sub integer NOT NULL,
    thread_id text NOT NULL,
    fields json NOT NULL,
    PRIMARY KEY (machine_id, source_uid, generation, "offset", sub)
);
CREATE TABLE messages (
    id text PRIMARY KEY,
    thread_id text NOT NULL,
    role text NOT NULL,
    ts text,
    turn_id text,
    parent_id text,
    run_id text,
    model text,
    injected integer NOT NULL DEFAULT 0,
    machine_id text NOT NULL,            -- owner: the smallest occurrence key
    source_uid text NOT NULL,
    source_no bigint NOT NULL,
    generation integer NOT NULL,
    "offset" bigint NOT NULL,
    sub integer NOT NULL,
    provenance json,
    usage json,
    extra json                           -- line-backed fields written out in full
);
CREATE TABLE message_occurrences (
    machine_id text NOT NULL,
    source_uid text NOT NULL,
    generation integer NOT NULL,
    "offset" bigint NOT NULL,
    sub integer NOT NULL,
    message_id text NOT NULL,
    PRIMARY KEY (machine_id, source_uid, generation, "offset", sub)
);
CREATE TABLE blocks (
    message_id text NOT NULL,
    position integer NOT NULL,
    type text NOT NULL,
    text text,
    call_id text,
    tool_name text,
    input json,
    output json,
    is_error integer,
    path text,
    patch text,
    media_type text,
    uri text,
    blob_sha256 text,
    redacted integer,
    extra json,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', left(coalesce(text, ''), {FTS_CHARS}))) STORED,
    PRIMARY KEY (message_id, position)
);
CREATE TABLE usage (
    key text PRIMARY KEY,                -- one model response
    thread_id text NOT NULL,
    message_id text,
    provider text,
    model text,
    ts text,
    input_tokens bigint,                 -- input not read from or written to the cache
    output_tokens bigint,
    cache_read_tokens bigint,
    cache_write_tokens bigint,
    reasoning_tokens bigint,
    extra json,
    machine_id text NOT NULL,            -- owner: the largest line key
    source_uid text NOT NULL,
    source_no bigint NOT NULL,
    generation integer NOT NULL,
    "offset" bigint NOT NULL
);
CREATE TABLE blobs (
    sha256 text PRIMARY KEY,
    media_type text,
    size bigint NOT NULL,
    data bytea NOT NULL
);
CREATE TABLE reports (
    machine_id text NOT NULL,
    source_uid text NOT NULL,
    generation integer NOT NULL,
    "offset" bigint NOT NULL,
    seq integer NOT NULL,
    kind text NOT NULL,
    reason text NOT NULL,
    detail text,
    PRIMARY KEY (machine_id, source_uid, generation, "offset", seq)
);

CREATE INDEX threads_created ON threads(created_at);
CREATE INDEX threads_cwd ON threads(cwd);
CREATE INDEX threads_parent ON threads(parent_thread_id);
CREATE INDEX machine_threads_thread ON machine_threads(thread_id);
CREATE INDEX thread_facts_thread ON thread_facts(thread_id);
CREATE INDEX messages_thread_order ON messages(thread_id, machine_id, source_no, generation, "offset", sub);
CREATE INDEX messages_ts ON messages(ts);
CREATE INDEX message_occurrences_message ON message_occurrences(message_id);
CREATE INDEX blocks_call_type ON blocks(call_id, type) WHERE call_id IS NOT NULL;
CREATE INDEX blocks_tool_name ON blocks(tool_name) WHERE tool_name IS NOT NULL;
CREATE INDEX blocks_type ON blocks(type);
CREATE INDEX blocks_tsv ON blocks USING gin(tsv);
CREATE INDEX usage_thread ON usage(thread_id);
CREATE INDEX usage_ts ON usage(ts);
CREATE INDEX usage_machine ON usage(machine_id);
CREATE INDEX reports_kind ON reports(kind, reason);

-- a recorded timestamp as timestamptz, NULL when it is not one (views only)
CREATE FUNCTION try_timestamptz(t text) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN t::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

-- 3. Views: the local archive's, in PostgreSQL SQL
CREATE VIEW conversation AS
SELECT m.thread_id, m.id AS message_id, m.role, m.ts, m.turn_id, m.model, m.injected,
       b.position, b.type AS block_type, b.text, b.tool_name, b.call_id, b.is_error, b.path,
       m.machine_id AS seq_machine, m.source_no AS seq_source, m.generation AS seq_generation,
       m."offset" AS seq_offset, m.sub AS seq_sub
FROM messages m JOIN blocks b ON b.message_id = m.id;

CREATE VIEW file_changes AS
SELECT b.message_id, b.position, m.thread_id, m.ts, t.cwd AS project, b.path,
       coalesce(b.extra->>'kind', b.extra->>'op') AS kind, m.machine_id
FROM blocks b JOIN messages m ON m.id = b.message_id LEFT JOIN threads t ON t.id = m.thread_id
WHERE b.type = 'file_change' AND b.path IS NOT NULL;

CREATE VIEW files_changed AS
SELECT project, path, count(*) AS changes, count(DISTINCT thread_id) AS threads,
       min(ts) AS first_ts, max(ts) AS last_ts
FROM file_changes GROUP BY project, path;

CREATE VIEW projects AS
SELECT t.cwd AS project, count(*) AS threads,
       (SELECT count(*) FROM threads c WHERE c.parent_thread_id IS NOT NULL
            AND c.cwd IS NOT DISTINCT FROM t.cwd) AS child_threads,
       string_agg(DISTINCT t.provider, ',') AS providers,
       min(t.created_at) AS first_created_at, max(t.created_at) AS last_created_at
FROM threads t WHERE t.parent_thread_id IS NULL GROUP BY t.cwd;

CREATE VIEW superseded_messages AS
SELECT m.id AS message_id, m.thread_id
FROM messages m
WHERE NOT EXISTS (
    SELECT 1 FROM message_occurrences o
    JOIN sources s ON s.machine_id = o.machine_id AND s.uid = o.source_uid
    WHERE o.message_id = m.id AND o.generation = s.current_generation
);

CREATE VIEW usage_responses AS
SELECT u.key, u.thread_id, u.message_id, u.provider, u.model, u.ts, substr(u.ts, 1, 10) AS day,
       coalesce(t.cwd, p.cwd) AS project,
       coalesce(u.input_tokens, 0) AS input_tokens,
       coalesce(u.output_tokens, 0) AS output_tokens,
       coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
       coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
       coalesce(u.reasoning_tokens, 0) AS reasoning_tokens,
       u.machine_id
FROM usage u
LEFT JOIN threads t ON t.id = u.thread_id
LEFT JOIN threads p ON p.id = t.parent_thread_id;

CREATE VIEW usage_daily AS
SELECT day, provider, model, count(*) AS responses,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
       sum(reasoning_tokens) AS reasoning_tokens
FROM usage_responses GROUP BY day, provider, model;

CREATE VIEW usage_by_model AS
SELECT provider, model, count(*) AS responses, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
       sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens,
       min(ts) AS first_ts, max(ts) AS last_ts
FROM usage_responses GROUP BY provider, model;

CREATE VIEW usage_by_project AS
SELECT project, provider, count(*) AS responses,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
       sum(reasoning_tokens) AS reasoning_tokens
FROM usage_responses GROUP BY project, provider;

CREATE VIEW usage_by_machine AS
SELECT u.machine_id, mc.name AS machine, u.day, u.provider, u.model, count(*) AS responses,
       sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
       sum(u.cache_read_tokens) AS cache_read_tokens, sum(u.cache_write_tokens) AS cache_write_tokens,
       sum(u.reasoning_tokens) AS reasoning_tokens
FROM usage_responses u LEFT JOIN machines mc ON mc.id = u.machine_id
GROUP BY u.machine_id, mc.name, u.day, u.provider, u.model;

CREATE VIEW thread_usage AS
SELECT thread_id, count(*) AS responses, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
       sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens,
       sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) AS total_tokens
FROM usage_responses GROUP BY thread_id;

CREATE VIEW thread_summary AS
SELECT t.id, t.title, t.provider, t.cwd, t.model, t.parent_thread_id, t.origin_message_id,
       t.created_at, t.machine_id,
       (SELECT min(ts) FROM messages m WHERE m.thread_id = t.id) AS first_ts,
       (SELECT max(ts) FROM messages m WHERE m.thread_id = t.id) AS last_ts,
       (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS messages,
       (SELECT count(DISTINCT m.turn_id) FROM messages m WHERE m.thread_id = t.id
            AND m.role = 'user' AND m.injected = 0) AS user_turns,
       (SELECT count(*) FROM messages m JOIN blocks b ON b.message_id = m.id
            WHERE m.thread_id = t.id AND b.type = 'tool_call') AS tool_calls,
       (SELECT coalesce(sum(coalesce(u.input_tokens, 0) + coalesce(u.cache_read_tokens, 0)
                            + coalesce(u.cache_write_tokens, 0) + coalesce(u.output_tokens, 0)), 0)
        FROM usage u WHERE u.thread_id = t.id) AS tokens,
       (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id) AS children
FROM threads t;

CREATE VIEW tool_calls AS
SELECT c.message_id, c.position, cm.thread_id, c.call_id, c.tool_name, c.input,
       coalesce(r.output::text, r.text) AS output, r.is_error, cm.ts AS call_ts, rm.ts AS result_ts,
       round(extract(epoch FROM try_timestamptz(rm.ts) - try_timestamptz(cm.ts))::numeric, 3)
           AS duration_seconds,
       r.message_id AS result_message_id, r.position AS result_position, cm.machine_id
FROM blocks c
JOIN messages cm ON cm.id = c.message_id
LEFT JOIN LATERAL (
    SELECT r2.message_id, r2.position, r2.output, r2.text, r2.is_error
    FROM blocks r2 JOIN messages m2 ON m2.id = r2.message_id
    WHERE r2.call_id = c.call_id AND r2.type = 'tool_result' AND m2.thread_id = cm.thread_id
    ORDER BY m2.machine_id COLLATE "C", m2.source_no, m2.generation, m2."offset", m2.sub, r2.position
    LIMIT 1) r ON true
LEFT JOIN messages rm ON rm.id = r.message_id
WHERE c.type = 'tool_call';

CREATE VIEW tool_stats AS
SELECT tool_name, count(*) AS calls, count(*) FILTER (WHERE is_error = 1) AS errors,
       round(count(*) FILTER (WHERE is_error = 1)::numeric / count(*), 4) AS error_rate,
       count(*) FILTER (WHERE result_message_id IS NULL) AS without_result,
       round(avg(duration_seconds), 3) AS avg_seconds,
       count(DISTINCT thread_id) AS threads
FROM tool_calls GROUP BY tool_name;

CREATE VIEW machine_summary AS
SELECT mc.id, mc.name, mc.first_push_at, mc.last_push_at,
       (SELECT count(*) FROM sources s WHERE s.machine_id = mc.id AND s.kind != 'store') AS sources,
       (SELECT count(*) FROM machine_threads t WHERE t.machine_id = mc.id) AS threads,
       (SELECT count(DISTINCT o.message_id) FROM message_occurrences o WHERE o.machine_id = mc.id) AS messages,
       (SELECT count(*) FROM usage u WHERE u.machine_id = mc.id) AS responses
FROM machines mc;
"""

# thread_summary shows lineage, as the local view does since m011 (issue 17): forked_from,
# forks apart from children (subagents)
P010_17_THREAD_SUMMARY_FORKS = """
DROP VIEW thread_summary;
CREATE VIEW thread_summary AS
SELECT t.id, t.title, t.provider, t.cwd, t.model, t.parent_thread_id, t.origin_message_id,
       CASE WHEN t.origin_message_id IS NOT NULL
            AND (t.metadata->>'forkedFrom') IS NOT DISTINCT FROM t.parent_thread_id
            THEN t.parent_thread_id END AS forked_from,
       t.created_at, t.machine_id,
       (SELECT min(ts) FROM messages m WHERE m.thread_id = t.id) AS first_ts,
       (SELECT max(ts) FROM messages m WHERE m.thread_id = t.id) AS last_ts,
       (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS messages,
       (SELECT count(DISTINCT m.turn_id) FROM messages m WHERE m.thread_id = t.id
            AND m.role = 'user' AND m.injected = 0) AS user_turns,
       (SELECT count(*) FROM messages m JOIN blocks b ON b.message_id = m.id
            WHERE m.thread_id = t.id AND b.type = 'tool_call') AS tool_calls,
       (SELECT coalesce(sum(coalesce(u.input_tokens, 0) + coalesce(u.cache_read_tokens, 0)
                            + coalesce(u.cache_write_tokens, 0) + coalesce(u.output_tokens, 0)), 0)
        FROM usage u WHERE u.thread_id = t.id) AS tokens,
       (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id AND NOT (c.origin_message_id IS NOT NULL
            AND (c.metadata->>'forkedFrom') IS NOT DISTINCT FROM c.parent_thread_id)) AS children,
       (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id AND c.origin_message_id IS NOT NULL
            AND (c.metadata->>'forkedFrom') IS NOT DISTINCT FROM c.parent_thread_id) AS forks
FROM threads t;
"""

# Ownership of a shared message follows the local rule (issue 25 after issue 17): the copy in
# the thread created first, then the thread id, then the smallest (source uid, generation,
# offset, sub), then machine id. A fork pushed before its original, or from another
# machine, so gives the team copy to the original's thread. Each occurrence records its
# thread (local m010); ``thread_lineage`` is derived on the server from the occurrences and
# their owners, and overlaid on a thread row whose fold names no parent; a fork point a
# machine could not resolve (its parent's messages were on another machine) is resolved on
# the server as ``projection.fold_thread`` does (``threads.derived`` says what was laid over). Occurrences pushed before this migration know no thread: every
# machine's watermarks are cleared, so its next push sends its rows again (upserts: nothing
# is doubled) and they get their thread and rank.
P020_25_SHARED_MESSAGE_OWNER = """
ALTER TABLE message_occurrences ADD COLUMN thread_id text;   -- the thread of this copy (its line's)
ALTER TABLE messages ADD COLUMN thread_created_at text;      -- the owner thread's createdAt (rank)
ALTER TABLE threads ADD COLUMN derived text;   -- what the server laid over the fold: 'lineage' or 'origin'
CREATE INDEX message_occurrences_thread ON message_occurrences(thread_id);
CREATE TABLE thread_lineage (
    thread_id text PRIMARY KEY,          -- a fork: its first messages are owned by another thread
    parent_thread_id text NOT NULL,      -- the thread owning the last inherited message
    origin_message_id text NOT NULL      -- the fork point: the last inherited message
);
DELETE FROM generations;
DELETE FROM machine_threads;
"""

# The threads a push wrote messages or copies of, recorded with each batch and settled at
# the push's end, when the usage rows of their shared messages follow the owner and their
# lineage is derived. A batch cannot do it: the message and its copies may be written at
# once by two batches or two machines, neither seeing the other's rows. A push killed
# before its end leaves them here for its next push to settle.
P030_UNSETTLED_THREADS = """
CREATE TABLE unsettled_threads (
    machine_id text NOT NULL,
    thread_id text NOT NULL,
    PRIMARY KEY (machine_id, thread_id)
);
"""

# The user's marks on threads (issue 42, local m111, archive/push_marks.py): per machine,
# replaced whole by each push whose marks changed (a digest in machine_marks), so an untag
# or a cleared note on a machine reaches the server too.
P040_42_THREAD_MARKS = """
CREATE TABLE thread_tags (
    machine_id text NOT NULL,
    thread_id text NOT NULL,
    tag text NOT NULL,
    created_at text NOT NULL,
    PRIMARY KEY (machine_id, thread_id, tag)
);
CREATE INDEX thread_tags_tag ON thread_tags(tag);
CREATE TABLE thread_notes (
    machine_id text NOT NULL,
    thread_id text NOT NULL,
    starred integer NOT NULL DEFAULT 0,
    note text,
    updated_at text NOT NULL,
    PRIMARY KEY (machine_id, thread_id)
);
CREATE TABLE machine_marks (
    machine_id text PRIMARY KEY,
    digest text NOT NULL
);
"""

# The threads' signals (issue 42, archive/signals.py): derived on each machine from its
# copy of the thread, pushed per machine (archive/push_marks.py) so that the team's
# ``threads --json`` carries them as the local one does; a digest per machine says when
# they changed (only the rows that differ are then sent or removed).
P050_42_THREAD_SIGNALS = """
CREATE TABLE thread_signals (
    machine_id text NOT NULL,
    thread_id text NOT NULL,
    tool_calls integer NOT NULL,
    tool_errors integer NOT NULL,
    retries integer NOT NULL,
    same_file_edits integer NOT NULL,
    compactions integer NOT NULL,
    interrupted_turns integer NOT NULL,
    ending text NOT NULL,
    first_ts text,
    last_ts text,
    duration_seconds double precision,
    active_seconds double precision,
    PRIMARY KEY (machine_id, thread_id)
);
CREATE INDEX thread_signals_thread ON thread_signals(thread_id);
CREATE TABLE machine_signals (
    machine_id text PRIMARY KEY,
    digest text NOT NULL
);
"""

# issue 38: each machine's prompt histories and side files as it last pushed them (replaced
# whole when their digest changed, archive/push_side.py); lost sessions are read over the
# team's threads: a prompt is lost when no machine pushed its session's messages
P060_38_SIDE_FILES = """
CREATE TABLE prompt_history (
    machine_id text NOT NULL,
    seq integer NOT NULL,                -- the order the machine's prompt_history view gave
    provider text NOT NULL,
    thread_id text,
    session_id text,
    project text,
    ts text,
    prompt text,
    PRIMARY KEY (machine_id, seq)
);
CREATE TABLE side_files (
    machine_id text NOT NULL,
    seq integer NOT NULL,
    provider text NOT NULL,
    path text,
    kind text,
    thread_id text,
    detail text,
    PRIMARY KEY (machine_id, seq)
);
CREATE INDEX side_files_thread ON side_files (thread_id);
CREATE TABLE machine_side (
    machine_id text PRIMARY KEY,
    digest text NOT NULL
);
CREATE VIEW lost_prompts AS
SELECT p.* FROM prompt_history p
WHERE (p.thread_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM messages m JOIN threads t ON t.id = m.thread_id
                       WHERE m.thread_id = p.thread_id AND t.provider = p.provider))
   OR (p.thread_id IS NULL AND p.project IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.cwd = p.project AND t.provider = p.provider))
   OR (p.thread_id IS NULL AND p.project IS NULL
       AND NOT EXISTS (SELECT 1 FROM blocks b JOIN messages m ON m.id = b.message_id JOIN threads t ON t.id = m.thread_id
                       WHERE m.role = 'user' AND b.type = 'text' AND t.provider = p.provider
                         AND btrim(b.text) = btrim(p.prompt)));
CREATE VIEW lost_sessions AS
SELECT p.provider, p.thread_id, max(p.session_id) AS session_id, max(p.project) AS project,
       count(DISTINCT coalesce(p.ts, '') || chr(31) || p.prompt) AS prompts,
       min(p.ts) AS first_ts, max(p.ts) AS last_ts
FROM lost_prompts p WHERE p.thread_id IS NOT NULL
GROUP BY p.provider, p.thread_id
UNION ALL
SELECT p.provider, NULL, NULL, p.project,
       count(DISTINCT coalesce(p.ts, '') || chr(31) || p.prompt), min(p.ts), max(p.ts)
FROM lost_prompts p WHERE p.thread_id IS NULL
GROUP BY p.provider, p.project;
"""

# (name, SQL): append only, never edit a released one
MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("p001_initial", P001_INITIAL),
    ("p010_17_thread_summary_forks", P010_17_THREAD_SUMMARY_FORKS),
    ("p020_25_shared_message_owner", P020_25_SHARED_MESSAGE_OWNER),
    ("p030_unsettled_threads", P030_UNSETTLED_THREADS),
    ("p040_42_thread_marks", P040_42_THREAD_MARKS),
    ("p050_42_thread_signals", P050_42_THREAD_SIGNALS),
    ("p060_38_side_files", P060_38_SIDE_FILES),
)


def migrate(conn: Any, schema: str) -> list[str]:
    """Create ``schema`` if needed and apply the pending migrations; returns their names.
    Leaves the connection's search_path on ``schema``. An up-to-date schema is only read
    (no lock, nothing to commit)."""
    with conn.transaction():
        conn.execute(f'SET search_path TO "{schema}"')
        if conn.execute(f"SELECT to_regclass('{MIGRATIONS_TABLE}') IS NOT NULL").fetchone()[0]:
            done = {r[0] for r in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")}
            if all(name in done for name, _sql in MIGRATIONS):
                return []
    with conn.transaction():
        # one migrator at a time per schema, across machines
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"sesh-archive:{schema}",))
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
            "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r[0] for r in conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE}")}
        applied = []
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            conn.execute(sql)
            conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (name) VALUES (%s)", (name,))
            applied.append(name)
    return applied
