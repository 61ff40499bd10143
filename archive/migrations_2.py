"""Migrations from m009 on; see ``migrations.py``. Append-only: a new migration goes at the
end of this file."""

from __future__ import annotations

import textwrap

from sqlite_utils import Database

from .migration_set import migrations


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


@migrations()
def m126_42_file_touches_in_order(db: Database) -> None:
    """``files PATH`` reads its page in order (issue 42): each lookup's index ends with the
    history's order (newest first, then thread, message, call), so a name, a path or a glob
    stops after the page instead of sorting every touch of a common name (4,849 for ``auth``
    in the 1 GB corpus: 144 ms, then under 1 ms; docs/file-history.md). The path is in the
    name and order indexes so a suffix or a glob is tested without reading the row. They
    replace the plain ``name`` and ``path`` indexes, which they begin with."""
    db.executescript(
        """
        DROP INDEX file_touches_name;
        DROP INDEX file_touches_path;
        CREATE INDEX file_touches_name ON file_touches(name, coalesce(ts, '') DESC, thread_id, message_id, position, path);
        CREATE INDEX file_touches_path ON file_touches(path, coalesce(ts, '') DESC, thread_id, message_id, position);
        CREATE INDEX file_touches_order ON file_touches(coalesce(ts, '') DESC, thread_id, message_id, position, path);
        """
    )


@migrations()
def m127_38_prompts_without_session(db: Database) -> None:
    """Prompt histories that name neither a session nor a project (issue 38: the TypeScript
    Codex CLI's ``history.json``): such a prompt is lost when no user message of a thread of
    its provider has its text (trimmed). ``lost_prompts`` lists every lost prompt (the three
    cases); ``lost_sessions`` groups them as before, the prompts with neither session nor
    project in one row per provider (thread, session and project NULL).

    Prompt histories are scanned for secrets at ingest (``secrets.scan_new``): a finding in a
    prompt has ``field`` 'prompt' and names the prompt's report (``source_id``, ``generation``,
    ``offset``; ``position`` = its ``seq``); ``prompts_upto`` is the ``reports`` rowid up to which
    every prompt was scanned (0 here: the histories already archived are scanned by the next
    ingest)."""
    db.executescript(
        textwrap.dedent(
            """
        ALTER TABLE secret_findings ADD COLUMN source_id INTEGER;
        ALTER TABLE secret_findings ADD COLUMN generation INTEGER;
        ALTER TABLE secret_findings ADD COLUMN offset INTEGER;
        ALTER TABLE secret_scan_progress ADD COLUMN prompts_upto INTEGER NOT NULL DEFAULT 0;
        DROP VIEW lost_sessions;
        CREATE VIEW lost_prompts AS
        WITH unattributed AS (
            SELECT DISTINCT provider FROM prompt_history WHERE thread_id IS NULL AND project IS NULL),
        user_texts AS (
            SELECT DISTINCT t.provider, trim(b.text) AS text
            FROM blocks b JOIN messages m ON m.id = b.message_id JOIN threads t ON t.id = m.thread_id
            WHERE m.role = 'user' AND b.type = 'text' AND t.provider IN (SELECT provider FROM unattributed))
        SELECT p.* FROM prompt_history p
        WHERE (p.thread_id IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM messages m JOIN threads t ON t.id = m.thread_id
                               WHERE m.thread_id = p.thread_id AND t.provider = p.provider))
           OR (p.thread_id IS NULL AND p.project IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.cwd = p.project AND t.provider = p.provider))
           OR (p.thread_id IS NULL AND p.project IS NULL
               AND NOT EXISTS (SELECT 1 FROM user_texts u WHERE u.provider = p.provider AND u.text = trim(p.prompt)));
        CREATE VIEW lost_sessions AS
        SELECT p.provider, p.thread_id, max(p.session_id) AS session_id, max(p.project) AS project,
               count(DISTINCT coalesce(p.ts, '') || char(31) || p.prompt) AS prompts,
               min(p.ts) AS first_ts, max(p.ts) AS last_ts
        FROM lost_prompts p WHERE p.thread_id IS NOT NULL
        GROUP BY p.provider, p.thread_id
        UNION ALL
        SELECT p.provider, NULL, NULL, p.project,
               count(DISTINCT coalesce(p.ts, '') || char(31) || p.prompt), min(p.ts), max(p.ts)
        FROM lost_prompts p WHERE p.thread_id IS NULL
        GROUP BY p.provider, p.project;
        """
        )
    )


@migrations()
def m135_33_saved_copies(db: Database) -> None:
    """A saved copy linked to the session it was saved from (issue 33): a Gemini CLI or Qwen
    Code ``/chat save`` checkpoint (``thread_id``) holds the conversation of a session
    (``session_thread_id``) up to one of its messages (``message_id``). Found by content at
    the end of every ingest and rebuild (``archive/saved_copies.py``); no row when no session
    of its project folder holds it. The threads are read again under their adapters' new
    revisions, which fills the table."""
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS saved_copies (
            thread_id TEXT PRIMARY KEY,          -- the copy (a checkpoint's thread)
            session_thread_id TEXT NOT NULL,     -- the session it was saved from
            message_id TEXT NOT NULL             -- the session's message the copy ends at
        );
        CREATE INDEX IF NOT EXISTS saved_copies_session ON saved_copies(session_thread_id);
        """
    )


@migrations()
def m138_42_derived_queue_without_insert_trigger(db: Database) -> None:
    """The file index's queue without a trigger per written message (issue 42): the
    projector queues the threads it writes, once per batch (``derived.queue``, from
    ``Projector.refold``), instead of ``derived_messages_ai`` running an ``INSERT OR IGNORE``
    into ``_derived_dirty`` for each message row a first ingest writes. Deletions and moves
    of messages and writes of ``threads`` rows keep their triggers (other writers: rederive,
    forget, rebuild; a thread's row is written when its messages are)."""
    db.executescript("DROP TRIGGER IF EXISTS derived_messages_ai;")


@migrations()
def m139_prompt_logs_have_no_outcome(db: Database) -> None:
    """A prompt log's thread (the prompts of a session kept apart from its answers) is not a
    conversation: its signals' ``ending`` is ``log`` and it has no outcome
    (``archive/signals.py``); it read ``open``, so every one showed as an abandoned session.
    The threads whose ending may change (``open``, no assistant message) are queued to be
    derived again by the next ingest (``_derived_dirty``)."""
    db.execute(
        "INSERT OR IGNORE INTO _derived_dirty SELECT s.thread_id FROM thread_signals s WHERE s.ending = 'open' "
        "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = s.thread_id AND m.role = 'assistant')"
    )
