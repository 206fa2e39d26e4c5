// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "habit",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "habit", targets: ["HabitCLI"]),
        .executable(name: "habit-bench", targets: ["HabitBench"]),
        // The client library a Swift gateway (Vapor, Hummingbird) links: no libpq in it.
        .library(name: "HabitClient", targets: ["HabitClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Property-based tests (generators, shrinking, replayable seeds) for the history rules.
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        // libpq from Debian's libpq-dev. Only PostgresClient may import it.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The one module that owns every libpq call.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        // JSON-RPC 2.0: framing, JSON codec, message model. Knows nothing of habits or SQL.
        .target(name: "JSONRPC"),
        // Schema migrations, the embedded server, HabitRepository and TaskRepository.
        .target(name: "HabitStore", dependencies: ["PostgresClient"]),
        // zlib from Debian's zlib1g-dev (scripts/pg-tmp ensure-packages): inflating Loop's zip
        // exports (LoopImport) and, in the tests, the PNG reader and the zip writer.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // Loop Habit Tracker's CSV export (zip) → our account document: CSV and zip readers and
        // the mapping. Pure: no database; the JSON document is a JSONRPC JSONValue.
        .target(name: "LoopImport", dependencies: ["JSONRPC", "CZlib"]),
        // The `habit serve` worker: typed method dispatch over JSONRPC onto HabitStore.
        .target(name: "HabitWorker", dependencies: [
            "HabitStore", "JSONRPC", "PostgresClient", "LoopImport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Pictures as SVG (calendar heatmap, weekly report) from plain values: Foundation only.
        .target(name: "HabitReports"),
        // Batch jobs (weekly completion counts) and the admin reports' reads.
        .target(name: "HabitBatch", dependencies: ["HabitStore", "PostgresClient", "HabitReports"]),
        // The executable only parses arguments and wires modules together.
        .executableTarget(name: "HabitCLI", dependencies: [
            "HabitStore", "HabitWorker", "HabitBatch", "HabitReports", "PostgresClient", "LoopImport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Spawns `habit serve` workers and talks to them: pipelined calls matched by id, restarts,
        // typed methods. Only JSONRPC (JSON values) and Foundation: a gateway must not link libpq.
        .target(name: "HabitClient", dependencies: ["JSONRPC"]),

        // Load generator for the worker benchmark (scripts/bench-worker.sh); not part of the product.
        .executableTarget(name: "HabitBench", dependencies: [
            "HabitClient", "JSONRPC",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Renders SVG with rsvg-convert and reads the PNG's pixels (Tests/HabitReportsTests, DeploymentTests).
        .target(name: "PNGTestSupport", dependencies: ["CZlib"], path: "Tests/PNGTestSupport"),
        .target(name: "TestSupport", dependencies: ["PostgresClient", "HabitStore", "HabitClient"], path: "Tests/TestSupport"),
        // FailCases/ is read from disk by FailCasesTests (the fuzzers' regression corpus), not built.
        // HabitClient against real spawned workers and the test database.
        .testTarget(name: "HabitClientTests", dependencies: ["HabitClient", "JSONRPC", "PostgresClient", "TestSupport"]),
        .testTarget(name: "JSONRPCTests", dependencies: ["JSONRPC"], exclude: ["FailCases"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "TestSupport"]),
        .testTarget(name: "HabitStoreTests", dependencies: [
            "HabitStore", "PostgresClient", "TestSupport", "LoopImport", "JSONRPC",
            .product(name: "PropertyBased", package: "swift-property-based"),
        ]),
        .testTarget(name: "HabitWorkerTests", dependencies: ["HabitStore", "PostgresClient", "TestSupport"]),
        .testTarget(name: "HabitBatchTests", dependencies: ["HabitBatch", "HabitStore", "PostgresClient", "TestSupport"]),
        // Several workers, pgbouncer, docker-compose: the deployment as it runs for real.
        .testTarget(name: "DeploymentTests", dependencies: ["HabitStore", "PostgresClient", "TestSupport", "HabitReports", "PNGTestSupport"]),
        // The SVG writer and the pictures, without a database: escaping, geometry, rendered pixels.
        .testTarget(name: "HabitReportsTests", dependencies: ["HabitReports", "PNGTestSupport"]),
        // The Loop converter against zips written like Loop's exporter writes them; no database.
        .testTarget(name: "LoopImportTests", dependencies: ["LoopImport", "JSONRPC", "CZlib"]),
        // Faults and hostile input against the spawned worker (short versions of scripts/reliability runs).
        .testTarget(name: "ReliabilityTests", dependencies: ["JSONRPC", "HabitStore", "PostgresClient", "TestSupport"]),
    ]
)
