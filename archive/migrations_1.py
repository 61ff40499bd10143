"""Migrations m001 to m008 (the first wave); see ``migrations.py``. Append-only: a new
migration goes at the end of ``migrations_2.py``."""

from __future__ import annotations

import textwrap

from sqlite_utils import Database

from .migration_set import migrations


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
