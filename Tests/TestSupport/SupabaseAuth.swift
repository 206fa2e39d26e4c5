import Foundation
import HabitStore
import PostgresClient

extension TestDatabase {
    /// Runs `body` with a database built the way Supabase's own init scripts build one: the
    /// roles and an `auth.uid()` that reads only the `request.jwt.claim.sub` setting exist
    /// before the migrations run (the baseline then leaves them alone). Dropped afterwards.
    public static func withSupabaseInitScriptAuth<Value>(_ body: (TestDatabase) throws -> Value) throws -> Value {
        try with(migrated: false) { database in
            let connection = try database.connect()
            defer { connection.close() }
            // Roles are cluster-wide: another test (or 0001 in another database) may have made them.
            try connection.executeScript(unsafeSQL: """
                DO $roles$
                DECLARE
                    name text;
                BEGIN
                    FOREACH name IN ARRAY ARRAY['anon', 'authenticated', 'service_role'] LOOP
                        BEGIN
                            EXECUTE format('CREATE ROLE %I NOLOGIN NOINHERIT', name);
                        EXCEPTION WHEN duplicate_object OR unique_violation THEN
                            NULL;
                        END;
                    END LOOP;
                END
                $roles$;
                CREATE SCHEMA auth;
                CREATE FUNCTION auth.uid() RETURNS uuid LANGUAGE sql STABLE AS $$
                    select nullif(current_setting('request.jwt.claim.sub', true), '')::uuid $$;
                GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role;
                GRANT EXECUTE ON FUNCTION auth.uid() TO anon, authenticated, service_role;
                """)
            try Migrator(directory: migrationsDirectory).migrate(connection)
            return try body(database)
        }
    }
}
