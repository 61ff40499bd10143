"""Schema migrations, applied in order on every open (``db.open_db``).

Invariants: migrations are append-only and never edited once released; each runs in one
transaction with the record of it having been applied; ``schema.sql`` is what they produce
on a blank database (``tests/test_schema.py`` checks, ``scripts/dump_schema.py`` rewrites it).

Layers (DESIGN.md): 1. source layer (``sources``, ``source_fingerprints``, ``source_paths``,
``generations``, ``source_lines``); 2. canonical projection (``threads``, ``thread_facts``,
``messages``, ``message_occurrences``, ``blocks``, ``usage``, ``blobs``, ``reports``);
3. indexes and views (FTS5 over block text, conversation views). ``ingest_runs`` is a log.
"""

from __future__ import annotations

import textwrap

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("sesh-archive")


@migrations()
def m001_initial(db: Database) -> None:
    db.executescript(
        textwrap.dedent(
            """
        -- 1. Source layer: every line ever read, byte for byte.
        CREATE TABLE sources (
            id INTEGER PRIMARY KEY,             -- local key, used by every row derived from the source
            uid TEXT NOT NULL UNIQUE,           -- deterministic: provider + first fingerprint
            provider TEXT NOT NULL,
            kind TEXT NOT NULL,                 -- lines | snapshot | store
            current_generation INTEGER NOT NULL DEFAULT 1,
            first_path TEXT,
            last_path TEXT
        );
        CREATE TABLE source_fingerprints (
            provider TEXT NOT NULL,
            fingerprint TEXT NOT NULL,          -- sha256 of the first line (snapshots: of the path key)
            source_id INTEGER NOT NULL REFERENCES sources(id),
            PRIMARY KEY (provider, fingerprint)
        );
        CREATE TABLE source_paths (
            path TEXT PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            size INTEGER,
            mtime_ns INTEGER,
            inode INTEGER,
            pending INTEGER NOT NULL DEFAULT 0, -- bytes after the last complete line, not yet taken
            missing INTEGER NOT NULL DEFAULT 0  -- 1 when the last run did not find the file
        );
        CREATE INDEX source_paths_source ON source_paths(source_id);
        CREATE TABLE generations (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            end_offset INTEGER NOT NULL DEFAULT 0,  -- committed: every byte before it is stored
            line_count INTEGER NOT NULL DEFAULT 0,
            last_line_offset INTEGER,
            last_line_sha TEXT,                 -- sha256 of the last committed line, newline included
            content_sha256 TEXT,                -- snapshots: sha256 of the document
            parser_state TEXT,                  -- JSON, saved with end_offset in one transaction
            PRIMARY KEY (source_id, generation)
        );
        -- Lines committed together are compressed together: a chunk holds the exact bytes
        -- of consecutive lines (newlines included) of one generation, from first_offset to
        -- end_offset; cross-line redundancy (envelopes, ids, paths) halves the stored size.
        CREATE TABLE source_chunks (
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            first_offset INTEGER NOT NULL,
            end_offset INTEGER NOT NULL,
            codec INTEGER NOT NULL,             -- 0 raw, 2 zstd
            data BLOB NOT NULL
        );
        CREATE UNIQUE INDEX source_chunks_key ON source_chunks(source_id, generation, first_offset);
        CREATE TABLE source_lines (
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            length INTEGER NOT NULL,            -- bytes, without the newline
            terminated INTEGER NOT NULL,        -- 1 if a newline followed it in the file
            chunk_id INTEGER NOT NULL REFERENCES source_chunks(id) -- bytes: chunk at offset - first_offset
        );
        CREATE UNIQUE INDEX source_lines_key ON source_lines(source_id, generation, offset);

        -- 2. Canonical projection, derived from layer 1 (``rebuild`` re-derives it).
        CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            provider TEXT,
            agent_id TEXT,
            parent_thread_id TEXT,
            origin_message_id TEXT,
            title TEXT,
            created_at TEXT,
            cwd TEXT,
            model TEXT,
            metadata TEXT,                      -- JSON object
            extra TEXT                          -- JSON: fields beyond the seed's
        );
        CREATE INDEX threads_created ON threads(created_at);
        CREATE INDEX threads_parent ON threads(parent_thread_id);
        CREATE INDEX threads_cwd ON threads(cwd);
        CREATE TABLE thread_facts (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            sub INTEGER NOT NULL,
            thread_id TEXT NOT NULL,
            fields TEXT NOT NULL,               -- JSON: partial thread, folded in key order
            PRIMARY KEY (source_id, generation, offset, sub)
        );
        CREATE INDEX thread_facts_thread ON thread_facts(thread_id);
        CREATE TABLE messages (
            id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            role TEXT NOT NULL,
            ts TEXT,
            turn_id TEXT,
            parent_id TEXT,
            run_id TEXT,
            model TEXT,
            injected INTEGER NOT NULL DEFAULT 0, -- vendor-injected context, not a user turn
            source_id INTEGER REFERENCES sources(id), -- first occurrence (smallest key) owns the row
            generation INTEGER,
            offset INTEGER,
            sub INTEGER,
            provenance TEXT,                    -- JSON
            usage TEXT,                         -- JSON, as the message carried it
            extra TEXT                          -- JSON: raw and fields beyond the seed's
        );
        CREATE INDEX messages_thread_order ON messages(thread_id, source_id, generation, offset, sub);
        CREATE INDEX messages_ts ON messages(ts);
        CREATE TABLE message_occurrences (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            sub INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (source_id, generation, offset, sub)
        );
        CREATE INDEX message_occurrences_message ON message_occurrences(message_id);
        CREATE TABLE blobs (
            sha256 TEXT PRIMARY KEY,
            media_type TEXT,
            size INTEGER NOT NULL,
            data BLOB NOT NULL
        );
        CREATE TABLE blocks (
            id INTEGER PRIMARY KEY,
            message_id TEXT NOT NULL REFERENCES messages(id),
            position INTEGER NOT NULL,
            type TEXT NOT NULL,                 -- text, reasoning, tool_call, tool_result, ...
            text TEXT,                          -- searchable rendering of the block
            call_id TEXT,
            tool_name TEXT,
            input TEXT,                         -- JSON: tool_call input
            output TEXT,                        -- JSON: tool_result output when not a plain string
            is_error INTEGER,
            path TEXT,
            patch TEXT,
            media_type TEXT,
            uri TEXT,
            blob_sha256 TEXT,                   -- blobs.sha256; the blob may arrive later (image files beside a log)
            redacted INTEGER,
            extra TEXT                          -- JSON: the rest of the block (raw, results, signature)
        );
        CREATE UNIQUE INDEX blocks_message_position ON blocks(message_id, position);
        CREATE INDEX blocks_call_id ON blocks(call_id) WHERE call_id IS NOT NULL;
        CREATE INDEX blocks_tool_name ON blocks(tool_name) WHERE tool_name IS NOT NULL;
        CREATE INDEX blocks_type ON blocks(type);
        CREATE TABLE usage (
            key TEXT PRIMARY KEY,               -- one model response
            thread_id TEXT NOT NULL,
            message_id TEXT,
            provider TEXT,
            model TEXT,
            ts TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            cache_read_tokens INTEGER,
            cache_write_tokens INTEGER,
            reasoning_tokens INTEGER,
            extra TEXT,
            source_id INTEGER NOT NULL,         -- the latest line that reported it wins
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL
        );
        CREATE INDEX usage_ts ON usage(ts);
        CREATE INDEX usage_thread ON usage(thread_id);
        CREATE TABLE reports (
            source_id INTEGER NOT NULL REFERENCES sources(id),
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL,
            detail TEXT,
            PRIMARY KEY (source_id, generation, offset, seq)
        );
        CREATE INDEX reports_kind ON reports(kind, reason);
        CREATE TABLE ingest_runs (
            id INTEGER PRIMARY KEY,
            command TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            elapsed_seconds REAL,
            files_seen INTEGER,
            files_changed INTEGER,
            bytes_read INTEGER,
            lines INTEGER,
            messages_added INTEGER,
            reports TEXT,                       -- JSON: {kind: count} for this run
            problems TEXT,                      -- JSON: unreadable files, broken links, failures
            status TEXT
        );

        -- 3. Indexes and views.
        CREATE VIRTUAL TABLE blocks_fts USING fts5(text, content='blocks', content_rowid='id');
        CREATE TRIGGER blocks_ai AFTER INSERT ON blocks BEGIN
            INSERT INTO blocks_fts(rowid, text) VALUES (new.id, new.text);
        END;
        CREATE TRIGGER blocks_ad AFTER DELETE ON blocks BEGIN
            INSERT INTO blocks_fts(blocks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END;
        CREATE TRIGGER blocks_au AFTER UPDATE ON blocks BEGIN
            INSERT INTO blocks_fts(blocks_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO blocks_fts(rowid, text) VALUES (new.id, new.text);
        END;

        CREATE VIEW superseded_messages AS
            SELECT m.id AS message_id, m.thread_id
            FROM messages m
            WHERE NOT EXISTS (
                SELECT 1 FROM message_occurrences o JOIN sources s ON s.id = o.source_id
                WHERE o.message_id = m.id AND o.generation = s.current_generation
            );
        """
        )
    )


@migrations()
def m002_views(db: Database) -> None:
    """Conversation, tool call, usage and thread summary views (Datasette and the CLI use them)."""
    db.executescript(
        textwrap.dedent(
            """
        -- One row per block, in thread order (sort by thread_id, seq_source, seq_generation,
        -- seq_offset, seq_sub, position).
        CREATE VIEW conversation AS
        SELECT m.thread_id, m.id AS message_id, m.role, m.ts, m.turn_id, m.model, m.injected,
               b.position, b.type AS block_type, b.text, b.tool_name, b.call_id, b.is_error, b.path,
               b.id AS block_id,
               m.source_id AS seq_source, m.generation AS seq_generation, m.offset AS seq_offset,
               m.sub AS seq_sub
        FROM messages m JOIN blocks b ON b.message_id = m.id;

        -- Tool calls with their results (same thread, same call id).
        CREATE VIEW tool_calls AS
        SELECT c.id AS block_id, cm.thread_id, cm.id AS message_id, c.call_id, c.tool_name, c.input,
               coalesce(r.output, r.text) AS output, r.is_error, cm.ts AS call_ts, rm.ts AS result_ts,
               CASE WHEN cm.ts IS NOT NULL AND rm.ts IS NOT NULL
                    THEN round((julianday(rm.ts) - julianday(cm.ts)) * 86400.0, 3) END AS duration_seconds,
               r.id AS result_block_id, rm.id AS result_message_id
        FROM blocks c
        JOIN messages cm ON cm.id = c.message_id
        LEFT JOIN blocks r ON r.id = (
            SELECT r2.id FROM blocks r2 JOIN messages m2 ON m2.id = r2.message_id
            WHERE r2.call_id = c.call_id AND r2.type = 'tool_result' AND m2.thread_id = cm.thread_id
            ORDER BY m2.source_id, m2.generation, m2.offset, m2.sub, r2.position LIMIT 1)
        LEFT JOIN messages rm ON rm.id = r.message_id
        WHERE c.type = 'tool_call';

        -- Usage: one row per model response (the usage table is keyed so), with its project,
        -- in four disjoint buckets: input_tokens (neither read from nor written to the cache),
        -- cache_read_tokens, cache_write_tokens, output_tokens (reasoning included).
        CREATE VIEW usage_responses AS
        SELECT u.key, u.thread_id, u.message_id, u.provider, u.model, u.ts, substr(u.ts, 1, 10) AS day,
               coalesce(t.cwd, p.cwd) AS project,
               coalesce(u.input_tokens, 0) AS input_tokens,
               coalesce(u.output_tokens, 0) AS output_tokens,
               coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
               coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
               coalesce(u.reasoning_tokens, 0) AS reasoning_tokens,
               coalesce(u.input_tokens, 0) AS vendor_input_tokens
        FROM usage u
        LEFT JOIN threads t ON t.id = u.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id;

        CREATE VIEW usage_daily AS
        SELECT day, provider, model, count(*) AS responses, sum(input_tokens) AS input_tokens,
               sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
               sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens
        FROM usage_responses GROUP BY day, provider, model;

        CREATE VIEW usage_by_model AS
        SELECT provider, model, count(*) AS responses, sum(input_tokens) AS input_tokens,
               sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
               sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens,
               min(ts) AS first_ts, max(ts) AS last_ts
        FROM usage_responses GROUP BY provider, model;

        CREATE VIEW usage_by_project AS
        SELECT project, provider, count(*) AS responses, sum(input_tokens) AS input_tokens,
               sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
               sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens
        FROM usage_responses GROUP BY project, provider;

        CREATE VIEW thread_summary AS
        SELECT t.id, t.title, t.provider, t.cwd, t.model, t.parent_thread_id, t.origin_message_id,
               t.created_at,
               (SELECT min(ts) FROM messages m WHERE m.thread_id = t.id) AS first_ts,
               (SELECT max(ts) FROM messages m WHERE m.thread_id = t.id) AS last_ts,
               (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS messages,
               (SELECT count(DISTINCT m.turn_id) FROM messages m WHERE m.thread_id = t.id
                    AND m.role = 'user' AND m.injected = 0) AS user_turns,
               -- "+b.type": walk the thread's messages, not every tool call in the archive
               (SELECT count(*) FROM messages m CROSS JOIN blocks b ON b.message_id = m.id
                    WHERE m.thread_id = t.id AND +b.type = 'tool_call') AS tool_calls,
               (SELECT coalesce(sum(coalesce(u.input_tokens, 0) + coalesce(u.cache_read_tokens, 0)
                    + coalesce(u.cache_write_tokens, 0) + coalesce(u.output_tokens, 0)), 0)
                FROM usage u WHERE u.thread_id = t.id) AS tokens,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id) AS children
        FROM threads t;
        """
        )
    )


@migrations()
def m003_datasette(db: Database) -> None:
    """Views behind the Datasette canned queries: tools, files changed, projects, usage per thread."""
    db.executescript(
        textwrap.dedent(
            """
        -- One row per tool name: how often it was called, how often it failed or never answered.
        CREATE VIEW tool_stats AS
        SELECT tool_name, count(*) AS calls, coalesce(sum(is_error = 1), 0) AS errors,
               round(1.0 * coalesce(sum(is_error = 1), 0) / count(*), 4) AS error_rate,
               sum(result_block_id IS NULL) AS without_result,
               round(avg(duration_seconds), 3) AS avg_seconds,
               count(DISTINCT thread_id) AS threads
        FROM tool_calls GROUP BY tool_name;

        -- One row per file change: the adapters' file_change blocks, plus edit tool calls whose
        -- call has no file_change block (older transcripts lack the structured result).
        CREATE VIEW file_changes AS
        SELECT b.id AS block_id, m.thread_id, m.id AS message_id, m.ts, t.cwd AS project, b.path,
               coalesce(json_extract(b.extra, '$.kind'), json_extract(b.extra, '$.op')) AS kind,
               NULL AS tool_name
        FROM blocks b JOIN messages m ON m.id = b.message_id LEFT JOIN threads t ON t.id = m.thread_id
        WHERE b.type = 'file_change' AND b.path IS NOT NULL
        UNION ALL
        SELECT b.id, m.thread_id, m.id, m.ts, t.cwd,
               coalesce(json_extract(b.input, '$.file_path'), json_extract(b.input, '$.notebook_path')),
               lower(b.tool_name), b.tool_name
        FROM blocks b JOIN messages m ON m.id = b.message_id LEFT JOIN threads t ON t.id = m.thread_id
        WHERE b.type = 'tool_call' AND b.tool_name IN ('Edit', 'MultiEdit', 'Write', 'NotebookEdit')
          AND json_valid(b.input) AND json_type(b.input) = 'object'
          AND coalesce(json_extract(b.input, '$.file_path'), json_extract(b.input, '$.notebook_path')) IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM blocks f WHERE f.call_id = b.call_id AND f.type = 'file_change');

        CREATE VIEW files_changed AS
        SELECT project, path, count(*) AS changes, count(DISTINCT thread_id) AS threads,
               min(ts) AS first_ts, max(ts) AS last_ts
        FROM file_changes GROUP BY project, path;

        -- Token totals per thread (one row per thread that reported usage).
        CREATE VIEW thread_usage AS
        SELECT thread_id, count(*) AS responses, sum(input_tokens) AS input_tokens,
               sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
               sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens,
               sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) AS total_tokens
        FROM usage_responses GROUP BY thread_id;

        -- One row per project (working directory of top-level threads).
        CREATE VIEW projects AS
        SELECT t.cwd AS project, count(*) AS threads,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id IS NOT NULL AND c.cwd IS t.cwd) AS child_threads,
               group_concat(DISTINCT t.provider) AS providers,
               min(t.created_at) AS first_created_at, max(t.created_at) AS last_created_at
        FROM threads t WHERE t.parent_thread_id IS NULL GROUP BY t.cwd;
        """
        )
    )


@migrations()
def m004_cli(db: Database) -> None:
    """Index for pairing tool calls with their results (the ``tool_calls`` view, ``stats --by tool``).

    Without it SQLite answers the view's ``call_id = ? AND type = 'tool_result'`` lookup
    through ``blocks_type`` and walks every tool result of the archive for each call
    (measured: 634 s for 12k calls on a 100 MB corpus; 0.2 s with the index)."""
    db.executescript(
        "CREATE INDEX blocks_call_type ON blocks(call_id, type) WHERE call_id IS NOT NULL;"
    )


@migrations()
def m005_fts_per_commit(db: Database) -> None:
    """Index block text once per transaction instead of once per block.

    The triggers of m001 fed every inserted block to FTS5 as it was written; FTS5 flushes
    its pending terms at every savepoint, so an ingest wrote a segment per file and merged
    them again and again. Now writers call ``projection.index_text`` before they commit: one
    ``INSERT ... SELECT`` adds the blocks above ``blocks_fts_progress.indexed_upto``. The
    triggers still keep the index right for blocks already indexed (deleted, updated, or a
    reused rowid), so nothing committed is ever missing from the index."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE blocks_fts_progress (
            indexed_upto INTEGER NOT NULL       -- blocks.id up to which blocks_fts holds every block
        );
        INSERT INTO blocks_fts_progress SELECT coalesce(max(id), 0) FROM blocks;
        DROP TRIGGER blocks_ai;
        DROP TRIGGER blocks_ad;
        DROP TRIGGER blocks_au;
        CREATE TRIGGER blocks_ai AFTER INSERT ON blocks
        WHEN new.id <= (SELECT indexed_upto FROM blocks_fts_progress) BEGIN
            INSERT INTO blocks_fts(rowid, text) VALUES (new.id, new.text);
        END;
        CREATE TRIGGER blocks_ad AFTER DELETE ON blocks
        WHEN old.id <= (SELECT indexed_upto FROM blocks_fts_progress) BEGIN
            INSERT INTO blocks_fts(blocks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END;
        CREATE TRIGGER blocks_au AFTER UPDATE ON blocks
        WHEN old.id <= (SELECT indexed_upto FROM blocks_fts_progress) BEGIN
            INSERT INTO blocks_fts(blocks_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO blocks_fts(rowid, text) SELECT new.id, new.text
            WHERE new.id <= (SELECT indexed_upto FROM blocks_fts_progress);
        END;
        """
        )
    )


@migrations()
def m006_usage_totals(db: Database) -> None:
    """Token totals per day, provider, model and thread, kept by triggers on ``usage``.

    The 30-day statistics read every usage row of the window through the usage_responses
    view (1 GB corpus: 30k rows, 65-120 ms per breakdown); these totals hold one row per
    thread, day and model. Unknown values are stored as '' (a primary key column) and read
    back as NULL by the views. (Its text is frozen: literals only, never module constants,
    which a later edit would change for new archives and not for old ones.)"""
    key = "coalesce(substr({r}.ts, 1, 10), ''), coalesce({r}.provider, ''), coalesce({r}.model, ''), coalesce({r}.thread_id, '')"
    bucket_list = (
        "coalesce({r}.input_tokens, 0)",
        "coalesce({r}.output_tokens, 0)",
        "coalesce({r}.cache_read_tokens, 0)",
        "coalesce({r}.cache_write_tokens, 0)",
        "coalesce({r}.reasoning_tokens, 0)",
    )
    buckets = ", ".join(bucket_list)
    add = f"""
            INSERT INTO usage_totals VALUES ({key.format(r="new")}, 1, {buckets.format(r="new")})
            ON CONFLICT DO UPDATE SET responses = responses + 1,
                input_tokens = input_tokens + excluded.input_tokens,
                output_tokens = output_tokens + excluded.output_tokens,
                cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
                reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens;"""
    sub = f"""
            INSERT INTO usage_totals VALUES ({key.format(r="old")}, -1, {buckets.format(r="old")})
            ON CONFLICT DO UPDATE SET responses = responses - 1,
                input_tokens = input_tokens - excluded.input_tokens,
                output_tokens = output_tokens - excluded.output_tokens,
                cache_read_tokens = cache_read_tokens - excluded.cache_read_tokens,
                cache_write_tokens = cache_write_tokens - excluded.cache_write_tokens,
                reasoning_tokens = reasoning_tokens - excluded.reasoning_tokens;
            DELETE FROM usage_totals WHERE responses = 0 AND (day, provider, model, thread_id)
                = ({key.format(r="old")});"""
    db.executescript(
        textwrap.dedent(
            f"""
        CREATE TABLE usage_totals (
            day TEXT NOT NULL,                  -- YYYY-MM-DD of the response; '' when unknown
            provider TEXT NOT NULL,
            model TEXT NOT NULL,                -- '' when unknown
            thread_id TEXT NOT NULL,
            responses INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,      -- the four disjoint buckets of usage_responses
            output_tokens INTEGER NOT NULL,
            cache_read_tokens INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL,
            reasoning_tokens INTEGER NOT NULL,
            PRIMARY KEY (day, provider, model, thread_id)
        ) WITHOUT ROWID;
        INSERT INTO usage_totals
        SELECT {key.format(r="u")}, count(*),
               {", ".join(f"sum({b.format(r='u')})" for b in bucket_list)}
        FROM usage u GROUP BY 1, 2, 3, 4;
        CREATE TRIGGER usage_totals_ai AFTER INSERT ON usage BEGIN {add}
        END;
        CREATE TRIGGER usage_totals_ad AFTER DELETE ON usage BEGIN {sub}
        END;
        CREATE TRIGGER usage_totals_au AFTER UPDATE ON usage BEGIN {sub} {add}
        END;

        DROP VIEW usage_daily;
        CREATE VIEW usage_daily AS
        SELECT nullif(day, '') AS day, provider, nullif(model, '') AS model, sum(responses) AS responses,
               sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
               sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
               sum(reasoning_tokens) AS reasoning_tokens
        FROM usage_totals GROUP BY day, provider, model;

        DROP VIEW usage_by_project;
        CREATE VIEW usage_by_project AS
        SELECT coalesce(t.cwd, p.cwd) AS project, u.provider, sum(u.responses) AS responses,
               sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
               sum(u.cache_read_tokens) AS cache_read_tokens, sum(u.cache_write_tokens) AS cache_write_tokens,
               sum(u.reasoning_tokens) AS reasoning_tokens
        FROM usage_totals u
        LEFT JOIN threads t ON t.id = u.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        GROUP BY 1, 2;
        """
        )
    )


@migrations()
def m007_drop_blocks_call_id(db: Database) -> None:
    """``blocks_call_type`` (call_id, type) answers every ``call_id = ?`` lookup that
    ``blocks_call_id`` did; one index less to keep up on each block written."""
    db.executescript("DROP INDEX blocks_call_id;")


@migrations()
def m008_neutral_usage(db: Database) -> None:
    """Usage rows hold neutral buckets for every provider: the adapter takes cached input out
    of a vendor's input figure (keeping the vendor's own figures in ``usage.extra``), so no
    view or trigger asks which provider a row came from.

    Archives written before this kept one vendor's cached input inside ``input_tokens`` and
    took it out in the views by provider name. Their rows are re-derived from the source layer: ``adapter_revisions``
    records the adapter revision each provider's rows were derived with, and opening the
    archive for writing rebuilds the providers whose adapter is newer (``ingest.upgrade``).
    The totals are recomputed here from the rows as they are, so that the triggers below
    subtract exactly what they count when the rebuild replaces those rows."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE adapter_revisions (
            provider TEXT PRIMARY KEY,
            revision INTEGER NOT NULL           -- Adapter.revision the provider's rows were derived with
        );

        DROP TRIGGER usage_totals_ai;
        DROP TRIGGER usage_totals_ad;
        DROP TRIGGER usage_totals_au;
        DELETE FROM usage_totals;
        INSERT INTO usage_totals
        SELECT coalesce(substr(ts, 1, 10), ''), coalesce(provider, ''), coalesce(model, ''), coalesce(thread_id, ''),
               count(*), sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)),
               sum(coalesce(cache_read_tokens, 0)), sum(coalesce(cache_write_tokens, 0)), sum(coalesce(reasoning_tokens, 0))
        FROM usage GROUP BY 1, 2, 3, 4;
        CREATE TRIGGER usage_totals_ai AFTER INSERT ON usage BEGIN
            INSERT INTO usage_totals VALUES (coalesce(substr(new.ts, 1, 10), ''), coalesce(new.provider, ''),
                coalesce(new.model, ''), coalesce(new.thread_id, ''), 1, coalesce(new.input_tokens, 0),
                coalesce(new.output_tokens, 0), coalesce(new.cache_read_tokens, 0),
                coalesce(new.cache_write_tokens, 0), coalesce(new.reasoning_tokens, 0))
            ON CONFLICT DO UPDATE SET responses = responses + 1,
                input_tokens = input_tokens + excluded.input_tokens,
                output_tokens = output_tokens + excluded.output_tokens,
                cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
                reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens;
        END;
        CREATE TRIGGER usage_totals_ad AFTER DELETE ON usage BEGIN
            INSERT INTO usage_totals VALUES (coalesce(substr(old.ts, 1, 10), ''), coalesce(old.provider, ''),
                coalesce(old.model, ''), coalesce(old.thread_id, ''), -1, coalesce(old.input_tokens, 0),
                coalesce(old.output_tokens, 0), coalesce(old.cache_read_tokens, 0),
                coalesce(old.cache_write_tokens, 0), coalesce(old.reasoning_tokens, 0))
            ON CONFLICT DO UPDATE SET responses = responses - 1,
                input_tokens = input_tokens - excluded.input_tokens,
                output_tokens = output_tokens - excluded.output_tokens,
                cache_read_tokens = cache_read_tokens - excluded.cache_read_tokens,
                cache_write_tokens = cache_write_tokens - excluded.cache_write_tokens,
                reasoning_tokens = reasoning_tokens - excluded.reasoning_tokens;
            DELETE FROM usage_totals WHERE responses = 0 AND (day, provider, model, thread_id)
                = (coalesce(substr(old.ts, 1, 10), ''), coalesce(old.provider, ''), coalesce(old.model, ''),
                   coalesce(old.thread_id, ''));
        END;
        CREATE TRIGGER usage_totals_au AFTER UPDATE ON usage BEGIN
            INSERT INTO usage_totals VALUES (coalesce(substr(old.ts, 1, 10), ''), coalesce(old.provider, ''),
                coalesce(old.model, ''), coalesce(old.thread_id, ''), -1, coalesce(old.input_tokens, 0),
                coalesce(old.output_tokens, 0), coalesce(old.cache_read_tokens, 0),
                coalesce(old.cache_write_tokens, 0), coalesce(old.reasoning_tokens, 0))
            ON CONFLICT DO UPDATE SET responses = responses - 1,
                input_tokens = input_tokens - excluded.input_tokens,
                output_tokens = output_tokens - excluded.output_tokens,
                cache_read_tokens = cache_read_tokens - excluded.cache_read_tokens,
                cache_write_tokens = cache_write_tokens - excluded.cache_write_tokens,
                reasoning_tokens = reasoning_tokens - excluded.reasoning_tokens;
            DELETE FROM usage_totals WHERE responses = 0 AND (day, provider, model, thread_id)
                = (coalesce(substr(old.ts, 1, 10), ''), coalesce(old.provider, ''), coalesce(old.model, ''),
                   coalesce(old.thread_id, ''));
            INSERT INTO usage_totals VALUES (coalesce(substr(new.ts, 1, 10), ''), coalesce(new.provider, ''),
                coalesce(new.model, ''), coalesce(new.thread_id, ''), 1, coalesce(new.input_tokens, 0),
                coalesce(new.output_tokens, 0), coalesce(new.cache_read_tokens, 0),
                coalesce(new.cache_write_tokens, 0), coalesce(new.reasoning_tokens, 0))
            ON CONFLICT DO UPDATE SET responses = responses + 1,
                input_tokens = input_tokens + excluded.input_tokens,
                output_tokens = output_tokens + excluded.output_tokens,
                cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
                reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens;
        END;

        -- one model response a row, in the four disjoint buckets, as the adapters stored them
        DROP VIEW usage_responses;
        CREATE VIEW usage_responses AS
        SELECT u.key, u.thread_id, u.message_id, u.provider, u.model, u.ts, substr(u.ts, 1, 10) AS day,
               coalesce(t.cwd, p.cwd) AS project,
               coalesce(u.input_tokens, 0) AS input_tokens,
               coalesce(u.output_tokens, 0) AS output_tokens,
               coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
               coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
               coalesce(u.reasoning_tokens, 0) AS reasoning_tokens,
               u.extra AS vendor_usage
        FROM usage u
        LEFT JOIN threads t ON t.id = u.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id;

        DROP VIEW thread_summary;
        CREATE VIEW thread_summary AS
        SELECT t.id, t.title, t.provider, t.cwd, t.model, t.parent_thread_id, t.origin_message_id,
               t.created_at,
               (SELECT min(ts) FROM messages m WHERE m.thread_id = t.id) AS first_ts,
               (SELECT max(ts) FROM messages m WHERE m.thread_id = t.id) AS last_ts,
               (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS messages,
               (SELECT count(DISTINCT m.turn_id) FROM messages m WHERE m.thread_id = t.id
                    AND m.role = 'user' AND m.injected = 0) AS user_turns,
               -- "+b.type": walk the thread's messages, not every tool call in the archive
               (SELECT count(*) FROM messages m CROSS JOIN blocks b ON b.message_id = m.id
                    WHERE m.thread_id = t.id AND +b.type = 'tool_call') AS tool_calls,
               (SELECT coalesce(sum(coalesce(u.input_tokens, 0) + coalesce(u.cache_read_tokens, 0)
                    + coalesce(u.cache_write_tokens, 0) + coalesce(u.output_tokens, 0)), 0)
                FROM usage u WHERE u.thread_id = t.id) AS tokens,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id) AS children
        FROM threads t;
        """
        )
    )


@migrations()
def m009_usage_message(db: Database) -> None:
    """Usage by the message that carries it: ``Message.usage`` is read through it, and a
    response's usage follows its message's thread when ownership of the message moves."""
    db.executescript("CREATE INDEX usage_message ON usage(message_id) WHERE message_id IS NOT NULL;")


@migrations()
def m020_16_shared_first_lines(db: Database) -> None:
    """Two files can share a first line (a leading summary record, a common context line)
    and still be two sources (issue 16): a fingerprint may now name several sources."""
    db.executescript(
        """
ALTER TABLE source_fingerprints RENAME TO source_fingerprints_old;
CREATE TABLE source_fingerprints (
    provider TEXT NOT NULL,
    fingerprint TEXT NOT NULL,          -- sha256 of the first line (snapshots: of the path key)
    source_id INTEGER NOT NULL REFERENCES sources(id),
    PRIMARY KEY (provider, fingerprint, source_id)
);
INSERT INTO source_fingerprints SELECT provider, fingerprint, source_id FROM source_fingerprints_old;
DROP TABLE source_fingerprints_old;
"""
    )


@migrations()
def m050_25_push(db: Database) -> None:
    """Team archive (``sesh-archive push``, archive/push.py). ``push_machine`` holds this
    archive's machine id, created by the first push (one row, never changed: the server
    keys every row this archive sends by it); its name can change (``--machine``).
    ``usage_source`` lets a push find the usage rows of the lines it has not sent yet
    without scanning ``usage``."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE push_machine (
            id TEXT PRIMARY KEY,                -- random, created once per archive
            name TEXT,                          -- shown on the server (default: the host name)
            created_at TEXT NOT NULL
        );
        CREATE INDEX usage_source ON usage(source_id, generation, offset);
        """
        )
    )


@migrations()
def m010_17_fork_lineage(db: Database) -> None:
    """Forks (issue 17): a message copied into another session's file (Claude Code
    ``--fork-session``) is stored once, but each copy belongs to the thread of its file.
    ``message_occurrences.thread_id`` says which; the stored row is the copy of the thread
    created first, whatever order the files arrive in, and ``thread_lineage`` holds what
    follows from the copies: the thread a fork inherited its history from and the last
    inherited message (derived rows, recomputed whenever a copy changes owner). An archive
    made before this migration gets the copies' threads from their stored owner; ``rebuild``
    re-derives both from the stored lines. Safe to run on a schema that already has them
    (tests build archives of older releases with today's projection)."""
    if "thread_id" not in db["message_occurrences"].columns_dict:
        db.execute("ALTER TABLE message_occurrences ADD COLUMN thread_id TEXT")  # the thread of this copy
        db.execute("UPDATE message_occurrences SET thread_id = (SELECT m.thread_id FROM messages m WHERE m.id = message_id)")
    db.executescript(
        textwrap.dedent(
            """
        CREATE INDEX IF NOT EXISTS message_occurrences_thread ON message_occurrences(thread_id);
        CREATE TABLE IF NOT EXISTS thread_lineage (
            thread_id TEXT PRIMARY KEY,         -- a fork: its first messages are another thread's
            parent_thread_id TEXT NOT NULL,     -- the thread owning the last inherited message
            origin_message_id TEXT NOT NULL     -- the fork point: the last inherited message
        );
        """
        )
    )


@migrations()
def m011_17_thread_summary_forks(db: Database) -> None:
    """``thread_summary`` shows lineage (issue 17): ``forked_from`` is the thread a fork
    continues (its inherited history is that thread's, up to ``origin_message_id``);
    ``messages`` and ``tokens`` stay the thread's own, each response counted once, and
    ``children`` counts subagents and sidechains, not forks (``forks`` counts those)."""
    db.executescript(
        textwrap.dedent(
            """
        DROP VIEW thread_summary;
        CREATE VIEW thread_summary AS
        SELECT t.id, t.title, t.provider, t.cwd, t.model, t.parent_thread_id, t.origin_message_id,
               CASE WHEN t.origin_message_id IS NOT NULL
                    AND json_extract(t.metadata, '$.forkedFrom') IS t.parent_thread_id
                    THEN t.parent_thread_id END AS forked_from,
               t.created_at,
               (SELECT min(ts) FROM messages m WHERE m.thread_id = t.id) AS first_ts,
               (SELECT max(ts) FROM messages m WHERE m.thread_id = t.id) AS last_ts,
               (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS messages,
               (SELECT count(DISTINCT m.turn_id) FROM messages m WHERE m.thread_id = t.id
                    AND m.role = 'user' AND m.injected = 0) AS user_turns,
               -- "+b.type": walk the thread's messages, not every tool call in the archive
               (SELECT count(*) FROM messages m CROSS JOIN blocks b ON b.message_id = m.id
                    WHERE m.thread_id = t.id AND +b.type = 'tool_call') AS tool_calls,
               (SELECT coalesce(sum(coalesce(u.input_tokens, 0) + coalesce(u.cache_read_tokens, 0)
                    + coalesce(u.cache_write_tokens, 0) + coalesce(u.output_tokens, 0)), 0)
                FROM usage u WHERE u.thread_id = t.id) AS tokens,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id AND NOT (c.origin_message_id IS NOT NULL
                    AND json_extract(c.metadata, '$.forkedFrom') IS c.parent_thread_id)) AS children,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id AND c.origin_message_id IS NOT NULL
                    AND json_extract(c.metadata, '$.forkedFrom') IS c.parent_thread_id) AS forks
        FROM threads t;
        """
        )
    )


@migrations()
def m030_18_coverage(db: Database) -> None:
    """Coverage per vendor version (issue 18): how each line read was explained, by the
    client version that wrote it, so format drift shows the night it happens.

    ``line_coverage``: one row per line read. Its version is the last client version a
    thread fact of the same source named at or before the line (the first one after it for
    lines above any, ``?`` where the adapter names none). Its kind is the first that applies
    of: a problem report (unknown, parse_error, invalid, refused, unexplained,
    adapter_error), ``message`` (the line yields a message), duplicate, metadata, skipped,
    warning, ``metadata`` again for a line that yields only thread facts or usage.
    ``coverage``: lines and share (percent of the provider and version's lines) by kind."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE VIEW line_coverage AS
        SELECT l.source_id, l.generation, l.offset, s.provider,
               coalesce(
                 (SELECT json_extract(f.fields, '$.metadata.version') FROM thread_facts f
                   WHERE f.source_id = l.source_id AND f.generation = l.generation AND f.offset <= l.offset
                     AND json_extract(f.fields, '$.metadata.version') IS NOT NULL
                   ORDER BY f.offset DESC LIMIT 1),
                 (SELECT json_extract(f.fields, '$.metadata.version') FROM thread_facts f
                   WHERE f.source_id = l.source_id AND f.generation = l.generation
                     AND json_extract(f.fields, '$.metadata.version') IS NOT NULL
                   ORDER BY f.offset LIMIT 1),
                 '?') AS client_version,
               coalesce(
                 (SELECT r.kind FROM reports r
                   WHERE r.source_id = l.source_id AND r.generation = l.generation AND r.offset = l.offset
                     AND r.kind IN ('unknown', 'parse_error', 'invalid', 'refused', 'unexplained', 'adapter_error')
                   ORDER BY r.seq LIMIT 1),
                 (SELECT 'message' FROM message_occurrences o
                   WHERE o.source_id = l.source_id AND o.generation = l.generation AND o.offset = l.offset LIMIT 1),
                 (SELECT r.kind FROM reports r
                   WHERE r.source_id = l.source_id AND r.generation = l.generation AND r.offset = l.offset
                   ORDER BY CASE r.kind WHEN 'duplicate' THEN 0 WHEN 'metadata' THEN 1 WHEN 'skipped' THEN 2 ELSE 3 END,
                            r.seq LIMIT 1),
                 'metadata') AS kind,
               (SELECT r.reason FROM reports r
                 WHERE r.source_id = l.source_id AND r.generation = l.generation AND r.offset = l.offset
                 ORDER BY r.seq LIMIT 1) AS reason
        FROM source_lines l JOIN sources s ON s.id = l.source_id;

        CREATE VIEW coverage AS
        SELECT provider, client_version, kind, count(*) AS lines,
               round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY provider, client_version), 2) AS share
        FROM line_coverage
        GROUP BY provider, client_version, kind;
        """
        )
    )


@migrations()
def m060_23_secret_findings(db: Database) -> None:
    """Secret scan (issue 23, archive/secrets.py). ``secret_findings`` holds where a rule
    matched (block or text blob, span inside the scanned text, sha256 of the value), never
    the value. Blocks and blobs are scanned once, above ``secret_scan_progress``'s
    watermarks, like ``blocks_fts_progress``: the triggers drop a deleted block's findings
    and lower the watermark when the top ids go (SQLite then reuses them), so every id at
    or below it has been scanned. ``secret_values`` keeps the first time a value was seen
    across rebuilds; ``forgotten_secrets`` records every ``forget``."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE secret_scan_progress (
            blocks_upto INTEGER NOT NULL,       -- blocks.id up to which every block was scanned
            blobs_upto INTEGER NOT NULL,        -- blobs.rowid likewise (text companions)
            rules_version INTEGER NOT NULL      -- secrets.RULES_VERSION the findings come from
        );
        INSERT INTO secret_scan_progress VALUES (0, 0, 0);
        CREATE TABLE secret_values (
            sha256 TEXT PRIMARY KEY,            -- sha256 of the value (utf-8); the value is never stored
            rule TEXT NOT NULL,
            first_seen TEXT NOT NULL            -- UTC, when a scan first found it
        );
        CREATE TABLE secret_findings (
            id INTEGER PRIMARY KEY,
            rule TEXT NOT NULL,                 -- e.g. aws-access-key, anthropic-api-key
            thread_id TEXT,
            message_id TEXT,
            block_id INTEGER,                   -- blocks.id (NULL for a blob)
            position INTEGER,                   -- the block's position in its message
            field TEXT NOT NULL,                -- text | patch | blob: the scanned column
            blob_sha256 TEXT,                   -- blobs.sha256 of a text companion
            start INTEGER NOT NULL,             -- character offsets inside the field's text
            end INTEGER NOT NULL,
            value_sha256 TEXT NOT NULL,
            first_seen TEXT NOT NULL
        );
        CREATE INDEX secret_findings_block ON secret_findings(block_id) WHERE block_id IS NOT NULL;
        CREATE INDEX secret_findings_thread ON secret_findings(thread_id);
        CREATE INDEX secret_findings_blob ON secret_findings(blob_sha256) WHERE blob_sha256 IS NOT NULL;
        CREATE TRIGGER secret_findings_block_ad AFTER DELETE ON blocks BEGIN
            DELETE FROM secret_findings WHERE block_id = old.id;
            UPDATE secret_scan_progress SET blocks_upto = (SELECT coalesce(max(id), 0) FROM blocks)
            WHERE blocks_upto > (SELECT coalesce(max(id), 0) FROM blocks);
        END;
        CREATE TRIGGER secret_findings_blob_ad AFTER DELETE ON blobs BEGIN
            DELETE FROM secret_findings WHERE blob_sha256 = old.sha256;
            UPDATE secret_scan_progress SET blobs_upto = (SELECT coalesce(max(rowid), 0) FROM blobs)
            WHERE blobs_upto > (SELECT coalesce(max(rowid), 0) FROM blobs);
        END;
        CREATE TABLE forgotten_secrets (
            id INTEGER PRIMARY KEY,
            forgotten_at TEXT NOT NULL,
            rule TEXT NOT NULL,
            value_sha256 TEXT NOT NULL,
            lines_rewritten INTEGER NOT NULL,   -- source lines whose stored bytes were rewritten
            sources TEXT NOT NULL,              -- JSON: [{source, generation, lines}]
            rows_rewritten INTEGER NOT NULL     -- projection rows (blocks, messages, blobs, ...) rewritten
        );
        -- Findings with their thread's title and a link to the block on the conversation page.
        CREATE VIEW secrets AS
        SELECT f.id, f.rule, f.thread_id, t.title AS thread_title, t.provider, f.message_id,
               f.position, f.field, f.start, f.end, f.value_sha256, f.first_seen,
               m.ts AS message_ts, f.block_id,
               CASE WHEN f.block_id IS NOT NULL AND f.thread_id IS NOT NULL
                    THEN '/-/sesh/thread/' || f.thread_id || '?block=' || f.block_id || '#b' || f.block_id END AS link
        FROM secret_findings f
        LEFT JOIN threads t ON t.id = f.thread_id
        LEFT JOIN messages m ON m.id = f.message_id;
        """
        )
    )


@migrations()
def m061_23_forget_generations(db: Database) -> None:
    """``forget`` writes the rewritten lines as a new generation (archive/forget.py).
    ``forget_generations`` records each one: which generation's lines it replaced (that
    one is gone: its bytes held the value). ``forgotten_values`` keeps, per source, the
    sha256 of every value forgotten from it, so that ingest masks the value in lines it
    reads later from that source's file (an append, a rewrite) and it never comes back."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE forget_generations (
            id INTEGER PRIMARY KEY,
            forgotten_at TEXT NOT NULL,
            source_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,        -- the new generation: the rewritten lines
            replaced_generation INTEGER NOT NULL,  -- the generation whose lines it replaced (gone)
            lines INTEGER NOT NULL,             -- lines in the generation
            lines_rewritten INTEGER NOT NULL    -- lines whose bytes changed
        );
        CREATE INDEX forget_generations_source ON forget_generations(source_id, generation);
        CREATE TABLE forgotten_values (
            source_id INTEGER NOT NULL,
            value_sha256 TEXT NOT NULL,         -- sha256 of a forgotten value (never the value)
            rule TEXT NOT NULL,
            forgotten_at TEXT NOT NULL,
            PRIMARY KEY (source_id, value_sha256)
        );
        """
        )
    )


@migrations()
def m012_17_handoff_lineage(db: Database) -> None:
    """Hand-offs (issue 17): a session ``emit`` wrote from an archived thread and a client
    resumed is ingested as a continuation of that thread (its lines name the messages they
    were written from). ``thread_lineage.kind`` says which: ``fork`` (a client's own fork)
    or ``handoff`` (emitted by the archive; ``metadata.emittedFrom`` names the thread), and
    ``thread_summary.lineage`` shows it for every thread with a ``forked_from``. Existing rows
    are forks; ``rebuild`` re-derives the kind."""
    if "kind" not in db["thread_lineage"].columns_dict:
        db.execute("ALTER TABLE thread_lineage ADD COLUMN kind TEXT NOT NULL DEFAULT 'fork'")  # fork | handoff
    db.executescript(
        textwrap.dedent(
            """
        DROP VIEW thread_summary;
        CREATE VIEW thread_summary AS
        SELECT t.id, t.title, t.provider, t.cwd, t.model, t.parent_thread_id, t.origin_message_id,
               CASE WHEN t.origin_message_id IS NOT NULL
                    AND json_extract(t.metadata, '$.forkedFrom') IS t.parent_thread_id
                    THEN t.parent_thread_id END AS forked_from,
               CASE WHEN t.origin_message_id IS NOT NULL
                    AND json_extract(t.metadata, '$.forkedFrom') IS t.parent_thread_id
                    THEN coalesce((SELECT l.kind FROM thread_lineage l WHERE l.thread_id = t.id), 'fork') END AS lineage,
               t.created_at,
               (SELECT min(ts) FROM messages m WHERE m.thread_id = t.id) AS first_ts,
               (SELECT max(ts) FROM messages m WHERE m.thread_id = t.id) AS last_ts,
               (SELECT count(*) FROM messages m WHERE m.thread_id = t.id) AS messages,
               (SELECT count(DISTINCT m.turn_id) FROM messages m WHERE m.thread_id = t.id
                    AND m.role = 'user' AND m.injected = 0) AS user_turns,
               -- "+b.type": walk the thread's messages, not every tool call in the archive
               (SELECT count(*) FROM messages m CROSS JOIN blocks b ON b.message_id = m.id
                    WHERE m.thread_id = t.id AND +b.type = 'tool_call') AS tool_calls,
               (SELECT coalesce(sum(coalesce(u.input_tokens, 0) + coalesce(u.cache_read_tokens, 0)
                    + coalesce(u.cache_write_tokens, 0) + coalesce(u.output_tokens, 0)), 0)
                FROM usage u WHERE u.thread_id = t.id) AS tokens,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id AND NOT (c.origin_message_id IS NOT NULL
                    AND json_extract(c.metadata, '$.forkedFrom') IS c.parent_thread_id)) AS children,
               (SELECT count(*) FROM threads c WHERE c.parent_thread_id = t.id AND c.origin_message_id IS NOT NULL
                    AND json_extract(c.metadata, '$.forkedFrom') IS c.parent_thread_id) AS forks
        FROM threads t;
        """
        )
    )


@migrations()
def m070_33_thread_claims(db: Database) -> None:
    """Thread identity across vendors (issue 33, ``archive/identity.py``): every vendor
    thread id a source names, with the vendor naming it. An id two vendors name stays the
    thread id of the vendor registered first; the other's becomes ``<vendor>-<id>``. Existing
    archives claim what their rows name (a thread already merged by two vendors is split by
    ``rebuild``)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS thread_claims (thread_id TEXT NOT NULL, provider TEXT NOT NULL, PRIMARY KEY (thread_id, provider))"
    )
    db.execute(
        "INSERT OR IGNORE INTO thread_claims (thread_id, provider) "
        "SELECT f.thread_id, s.provider FROM thread_facts f JOIN sources s ON s.id = f.source_id "
        "UNION SELECT m.thread_id, s.provider FROM message_occurrences m JOIN sources s ON s.id = m.source_id "
        "WHERE m.thread_id IS NOT NULL"
    )


@migrations()
def m080_38_side_files(db: Database) -> None:
    """Side files (issue 38): what the vendors keep beside their transcripts (prompt
    histories, file backups, todos, plans, usage logs) is archived as sources of its own;
    their parsers name what each line holds in ``reports`` (``vendors.base``: reasons
    ``prompt history``, ``side file`` and ``file checkpoint``, JSON ``detail``). These views
    read them. ``lost_sessions``: sessions a prompt history names whose transcript has no
    message in the archive (the vendor deleted it before an ingest saw it), and, for prompt
    histories without session ids, projects with no thread of that provider at all."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE VIEW prompt_history AS
        SELECT r.source_id, r.generation, r.offset, s.provider,
               json_extract(r.detail, '$.thread') AS thread_id,
               json_extract(r.detail, '$.session') AS session_id,
               json_extract(r.detail, '$.project') AS project,
               json_extract(r.detail, '$.ts') AS ts,
               json_extract(r.detail, '$.prompt') AS prompt
        FROM reports r JOIN sources s ON s.id = r.source_id
        WHERE r.kind = 'metadata' AND r.reason = 'prompt history';
        CREATE VIEW lost_sessions AS
        SELECT p.provider, p.thread_id, max(p.session_id) AS session_id, max(p.project) AS project,
               count(DISTINCT coalesce(p.ts, '') || char(31) || p.prompt) AS prompts,
               min(p.ts) AS first_ts, max(p.ts) AS last_ts
        FROM prompt_history p
        WHERE p.thread_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM messages m JOIN threads t ON t.id = m.thread_id
                          WHERE m.thread_id = p.thread_id AND t.provider = p.provider)
        GROUP BY p.provider, p.thread_id
        UNION ALL
        SELECT p.provider, NULL, NULL, p.project,
               count(DISTINCT coalesce(p.ts, '') || char(31) || p.prompt), min(p.ts), max(p.ts)
        FROM prompt_history p
        WHERE p.thread_id IS NULL AND p.project IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.cwd = p.project AND t.provider = p.provider)
        GROUP BY p.provider, p.project;
        CREATE VIEW side_files AS
        SELECT s.id AS source_id, s.provider, s.last_path AS path, s.current_generation AS generation,
               json_extract(r.detail, '$.kind') AS kind, json_extract(r.detail, '$.thread') AS thread_id,
               r.detail
        FROM reports r JOIN sources s ON s.id = r.source_id AND r.generation = s.current_generation
        WHERE r.kind = 'metadata' AND r.reason = 'side file';
        CREATE VIEW file_checkpoints AS
        SELECT json_extract(r.detail, '$.thread') AS thread_id,
               json_extract(r.detail, '$.message') AS message_id,
               json_extract(r.detail, '$.path') AS path,
               json_extract(r.detail, '$.at') AS at,
               json_extract(r.detail, '$.version') AS version,
               json_extract(r.detail, '$.backup') AS backup,
               (SELECT b.id FROM sources b WHERE b.provider = s.provider
                  AND substr(b.last_path, -length(json_extract(r.detail, '$.backup')) - 1)
                      = '/' || json_extract(r.detail, '$.backup')
                ORDER BY b.id LIMIT 1) AS backup_source_id,
               r.source_id, r.generation, r.offset
        FROM reports r JOIN sources s ON s.id = r.source_id
        WHERE r.kind = 'metadata' AND r.reason = 'file checkpoint';
        """
        )
    )


@migrations()
def m096_36_project_roots(db: Database) -> None:
    """Project-local sources (issue 36): the folders the user named with ``ingest --root``,
    which every later run searches for the files vendors write inside projects
    (``archive/project_roots.py``); ``sesh-archive roots --remove`` forgets one."""
    db.execute("CREATE TABLE roots (path TEXT PRIMARY KEY, added_at TEXT NOT NULL)")


@migrations()
def m110_42_file_index_signals(db: Database) -> None:
    """File history and signals per thread (issue 42, ``archive/derived.py``): derived
    tables, recomputed for every thread whose messages or row changed (the triggers queue it
    in ``_derived_dirty``) before each ingest, rebuild or forget commits. ``file_touches``: one
    row per file a tool call (or file-change block) read, created, changed, deleted or named,
    its path normalised against the thread's cwd. ``thread_signals``: the figures of
    ``archive/signals.py``. An upgraded archive queues every thread and fills them now."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE file_touches (
            thread_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            position INTEGER NOT NULL,          -- the tool call's or file change's blocks.position
            seq INTEGER NOT NULL,               -- the path's place among the block's paths
            ts TEXT,
            path TEXT NOT NULL,                 -- absolute when the thread's cwd is known
            name TEXT NOT NULL,                 -- the path's last component (suffix lookups)
            action TEXT NOT NULL,               -- read | created | changed | deleted | named
            tool_name TEXT,
            PRIMARY KEY (message_id, position, seq)
        );
        CREATE INDEX file_touches_name ON file_touches(name);
        CREATE INDEX file_touches_path ON file_touches(path);
        CREATE INDEX file_touches_thread ON file_touches(thread_id);
        CREATE TABLE thread_signals (
            thread_id TEXT PRIMARY KEY,
            tool_calls INTEGER NOT NULL,
            tool_errors INTEGER NOT NULL,
            retries INTEGER NOT NULL,           -- calls repeating the previous call (name and input)
            same_file_edits INTEGER NOT NULL,   -- changes of a file after its first in the thread
            compactions INTEGER NOT NULL,
            interrupted_turns INTEGER NOT NULL,
            ending TEXT NOT NULL,               -- completed | errored | open (read as running or abandoned)
            first_ts TEXT,
            last_ts TEXT,
            duration_seconds REAL,
            active_seconds REAL
        );
        CREATE TABLE _derived_dirty (thread_id TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TRIGGER derived_messages_ai AFTER INSERT ON messages BEGIN
            INSERT OR IGNORE INTO _derived_dirty VALUES (new.thread_id);
        END;
        CREATE TRIGGER derived_messages_ad AFTER DELETE ON messages BEGIN
            INSERT OR IGNORE INTO _derived_dirty VALUES (old.thread_id);
        END;
        CREATE TRIGGER derived_messages_au AFTER UPDATE OF thread_id ON messages BEGIN
            INSERT OR IGNORE INTO _derived_dirty VALUES (old.thread_id);
            INSERT OR IGNORE INTO _derived_dirty VALUES (new.thread_id);
        END;
        CREATE TRIGGER derived_threads_ai AFTER INSERT ON threads BEGIN
            INSERT OR IGNORE INTO _derived_dirty VALUES (new.id);
        END;
        CREATE TRIGGER derived_threads_ad AFTER DELETE ON threads BEGIN
            INSERT OR IGNORE INTO _derived_dirty VALUES (old.id);
        END;
        INSERT OR IGNORE INTO _derived_dirty SELECT id FROM threads;
        """
        )
    )
    from .derived import refresh

    refresh(db.conn)


@migrations()
def m111_42_user_marks(db: Database) -> None:
    """Tags, stars and notes (issue 42, ``archive/marks.py``): the user's, not the vendor's.
    Keyed by thread id with no reference to ``threads``, so ``rebuild``, ``forget`` of a
    source and upgrades never touch them; ``push`` carries them to PostgreSQL."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE thread_tags (
            thread_id TEXT NOT NULL,
            tag TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (thread_id, tag)
        );
        CREATE INDEX thread_tags_tag ON thread_tags(tag);
        CREATE TABLE thread_notes (
            thread_id TEXT PRIMARY KEY,
            starred INTEGER NOT NULL DEFAULT 0,
            note TEXT,
            updated_at TEXT NOT NULL
        );
        """
        )
    )



@migrations()
def m100_40_semantic(db: Database) -> None:
    """Search by meaning (issue 40): chunk vectors of prompts, answers and reasoning.

    Layer 3 (disposable, derived by ``archive/semantic.py``). Vectors live in segments (one
    blob of many float16 rows) so a search reads a few hundred blobs, not a row per chunk; a
    chunk row names its segment row, the block (and message) it was cut from and the digest of
    the block's text. A block written at or below the watermark (a rebuild, a message a vendor
    rewrote, ``forget``) is queued for a check against that digest."""
    db.executescript(
        textwrap.dedent(
            """
        CREATE TABLE semantic_state (
            model TEXT,                         -- the model the vectors are from; another one: all rebuilt
            dim INTEGER,
            embedded_upto INTEGER NOT NULL DEFAULT 0,  -- blocks.id up to which every block is embedded
            version INTEGER NOT NULL DEFAULT 0  -- bumped by every write: readers' cached matrices key on it
        );
        INSERT INTO semantic_state (model, dim, embedded_upto, version) VALUES (NULL, NULL, 0, 0);
        CREATE TABLE semantic_segments (
            id INTEGER PRIMARY KEY,
            rows INTEGER NOT NULL,
            vectors BLOB NOT NULL               -- rows x dim float16, little-endian, unit length (zero: dropped)
        );
        CREATE TABLE semantic_chunks (
            segment INTEGER NOT NULL REFERENCES semantic_segments(id),
            row INTEGER NOT NULL,
            block_id INTEGER NOT NULL,          -- blocks.id the chunk was cut from
            message_id TEXT NOT NULL,
            start INTEGER NOT NULL,             -- character offset of the chunk in the block's text
            length INTEGER NOT NULL,
            digest TEXT NOT NULL,               -- of the block's text when embedded (sha1, 16 hex digits)
            PRIMARY KEY (segment, row)
        ) WITHOUT ROWID;
        CREATE INDEX semantic_chunks_block ON semantic_chunks(block_id);
        CREATE TABLE semantic_recheck (
            block_id INTEGER PRIMARY KEY        -- written again at or below the watermark: compare, re-embed if changed
        );
        CREATE TRIGGER blocks_semantic_ai AFTER INSERT ON blocks
        WHEN new.id <= (SELECT embedded_upto FROM semantic_state)
        BEGIN
            INSERT OR IGNORE INTO semantic_recheck (block_id) VALUES (new.id);
        END;
        CREATE TRIGGER blocks_semantic_au AFTER UPDATE OF text, message_id, type ON blocks
        WHEN new.id <= (SELECT embedded_upto FROM semantic_state)
        BEGIN
            INSERT OR IGNORE INTO semantic_recheck (block_id) VALUES (new.id);
        END;
        """
        )
    )
