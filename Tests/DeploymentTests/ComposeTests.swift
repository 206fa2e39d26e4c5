import Foundation
import TestSupport
import Testing

/// docker-compose.yml, checked without a Docker engine: `docker-compose config` (Debian's
/// docker-compose 1.29, installed by scripts/test.sh) parses, validates and interpolates it;
/// the resolved model is then read as JSON and checked for what the deployment relies on.
@Suite("deployment: docker-compose.yml")
struct ComposeTests {
    static let root = TestDatabase.repositoryRoot
    static let composeFile = root.appendingPathComponent("docker-compose.yml").path
    static let secrets = ["POSTGRES_PASSWORD": "test-owner-password", "HABIT_WORKER_PASSWORD": "test-worker-password"]

    static func dockerCompose(_ arguments: [String], environment extra: [String: String]) throws -> WorkerProcess.CommandResult {
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("COMPOSE_") && !key.hasPrefix("DOCKER_") && !key.hasPrefix("HABIT_") && !key.hasPrefix("PGBOUNCER_")
                && !["POSTGRES_PASSWORD", "DATABASE_URL"].contains(key)
        }
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/bin:/usr/bin:/bin"
        for (key, value) in extra { environment[key] = value }
        return try WorkerProcess.run("/usr/bin/env", ["docker-compose", "--file", composeFile, "--project-directory", root.path] + arguments,
                                     environment: environment)
    }

    /// The resolved configuration as JSON objects (YAML → JSON with the PyYAML docker-compose uses).
    static func resolvedModel() throws -> [String: Any] {
        let config = try dockerCompose(["config"], environment: secrets)
        guard config.status == 0 else { throw UnexpectedAnswer(description: "docker-compose config exited \(config.status): \(config.stderr)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("habit-compose-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let yaml = directory.appendingPathComponent("resolved.yml")
        try Data(config.stdout.utf8).write(to: yaml)
        let json = try WorkerProcess.run("/usr/bin/env", ["python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", yaml.path],
                                         environment: ProcessInfo.processInfo.environment)
        guard json.status == 0, let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any] else {
            throw UnexpectedAnswer(description: "could not read the resolved configuration: \(json.stderr)")
        }
        return object
    }

    @Test("docker-compose config accepts the file: postgres with a health check and a named volume, a one-shot migrate, pgbouncer, the worker")
    func validates() throws {
        let model = try Self.resolvedModel()
        let services = try #require(model["services"] as? [String: [String: Any]])
        #expect(Set(services.keys) == ["postgres", "migrate", "pgbouncer", "worker"])

        // PostgreSQL 15, its data on a named volume, a health check the others wait for.
        let postgres = try #require(services["postgres"])
        #expect((postgres["image"] as? String)?.hasPrefix("postgres:15") == true)
        let volumes = (postgres["volumes"] as? [Any] ?? []).map { "\($0)" }
        #expect(volumes.contains { $0.hasPrefix("pgdata:/var/lib/postgresql/data") }, "\(volumes)")
        #expect((model["volumes"] as? [String: Any])?.keys.contains("pgdata") == true)
        let healthcheck = try #require(postgres["healthcheck"] as? [String: Any])
        #expect((healthcheck["test"] as? [String])?.contains("pg_isready") == true, "\(healthcheck)")

        // migrate: the habit image, run once after the server is healthy.
        let migrate = try #require(services["migrate"])
        #expect(migrate["command"] as? [String] == ["migrate"])
        #expect(migrate["restart"] as? String == "no")
        #expect(condition(migrate, "postgres") == "service_healthy")
        #expect((environment(migrate)["DATABASE_URL"])?.contains("@postgres:5432/habit") == true, "migrations go straight to PostgreSQL")

        // pgbouncer and the worker behind it, which starts only after the migrations succeeded.
        #expect(condition(services["pgbouncer"] ?? [:], "postgres") == "service_healthy")
        let worker = try #require(services["worker"])
        #expect(condition(worker, "migrate") == "service_completed_successfully")
        #expect(condition(worker, "pgbouncer") == "service_healthy")
        #expect(worker["stdin_open"] as? Bool == true)
        let settings = environment(worker)
        #expect(settings["DATABASE_URL"] == "postgresql://habit_worker:test-worker-password@pgbouncer:6432/habit")
        #expect(settings["HABIT_PREPARED_STATEMENTS"] == "off", "pgbouncer 1.18 in transaction mode needs unnamed statements")
        for variable in try ConfigurationTests.helpOptions().map(\.variable)
        where !["HABIT_DATA_DIR", "HABIT_MIGRATIONS_DIR", "HABIT_MIGRATE", "DATABASE_URL"].contains(variable) {
            #expect(settings[variable] != nil, "the worker service does not set \(variable)")
        }

        // Everything the file points at exists.
        for service in ["migrate", "pgbouncer", "worker"] {
            let build = try #require(services[service]?["build"] as? [String: Any], "\(service) is not built from this package")
            let dockerfile = URL(fileURLWithPath: build["context"] as? String ?? "").appendingPathComponent(build["dockerfile"] as? String ?? "")
            #expect(FileManager.default.fileExists(atPath: dockerfile.path), "\(dockerfile.path)")
        }
        for script in ["scripts/docker/initdb/10-habit-login-roles.sh", "scripts/docker/pgbouncer/entrypoint.sh"] {
            #expect(FileManager.default.isExecutableFile(atPath: Self.root.appendingPathComponent(script).path), "\(script)")
        }
        #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent("scripts/docker/Dockerfile.dockerignore").path))
    }

    @Test("docker-compose config refuses to run without the passwords")
    func passwordsAreRequired() throws {
        let result = try Self.dockerCompose(["config", "--quiet"], environment: [:])
        #expect(result.status != 0)
        #expect(result.stderr.contains("set POSTGRES_PASSWORD") || result.stderr.contains("set HABIT_WORKER_PASSWORD"), "\(result.stderr)")
    }

    func condition(_ service: [String: Any], _ dependency: String) -> String? {
        ((service["depends_on"] as? [String: Any])?[dependency] as? [String: Any])?["condition"] as? String
    }

    func environment(_ service: [String: Any]) -> [String: String] {
        (service["environment"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
    }
}
