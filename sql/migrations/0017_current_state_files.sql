-- 0017: bookkeeping of the current-state files (issue 29). Functions, views, triggers,
-- policies and grants are no longer versioned migrations but files that hold each object's
-- current definition (sql/functions, sql/views, sql/triggers, sql/policies.sql,
-- sql/grants.sql). `habit migrate` applies one again when its text changed, or when a
-- versioned migration was applied after it (the migration may have dropped what the file
-- defines: DROP FUNCTION … CASCADE takes the triggers along), and records it here.

CREATE TABLE habit.current_state_files (
    path           text PRIMARY KEY,
    checksum       text NOT NULL,
    schema_version integer NOT NULL,
    applied_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE habit.current_state_files IS
    'Current-state files of sql/ (functions, views, triggers, policies, grants) as last applied by habit migrate.';
COMMENT ON COLUMN habit.current_state_files.path IS 'The file''s path under sql/, e.g. functions/history.sql.';
COMMENT ON COLUMN habit.current_state_files.checksum IS 'SHA-256 (hex) of the file as applied.';
COMMENT ON COLUMN habit.current_state_files.schema_version IS
    'The schema version (highest habit.schema_migrations.version) it was applied at: a later versioned migration makes it apply again.';
COMMENT ON COLUMN habit.current_state_files.applied_at IS 'When it was applied.';

COMMENT ON TABLE habit.schema_migrations IS
    'Applied versioned migrations (sql/migrations/NNNN_name.sql; below the baseline, the files it replaced), written by habit migrate.';
