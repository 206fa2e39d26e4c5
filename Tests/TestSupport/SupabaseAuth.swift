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
            // Roles are cluster-wide: another test (or the baseline in another database) may have
            // made them. Made here, they get Supabase's attributes (service_role BYPASSRLS, as in
            // its init scripts): made without it, every database migrated later in the same
            // cluster kept a service_role that row-level security stopped (the baseline leaves
            // existing roles alone), and the tests that ran after this one failed.
            try connection.executeScript(unsafeSQL: """
                DO $roles$
                DECLARE
                    role record;
                BEGIN
                    FOR role IN SELECT * FROM (VALUES ('anon', 'NOLOGIN NOINHERIT'), ('authenticated', 'NOLOGIN NOINHERIT'),
                                                      ('service_role', 'NOLOGIN NOINHERIT BYPASSRLS')) r(name, attributes) LOOP
                        BEGIN
                            EXECUTE format('CREATE ROLE %I %s', role.name, role.attributes);
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
