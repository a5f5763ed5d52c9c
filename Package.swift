// swift-tools-version:6.0
// LiveBus: a gRPC-free message-bus sync engine for live activity state.
// Targets follow ../shared/DESIGN.md: pure rule targets import Foundation only,
// only LiveBusLoop imports libuv, only LiveBusDaemon imports SQLite.
import PackageDescription

// tools/fuzz's build (LIVEBUS_FUZZ_BUILD=1, in .build-fuzz): libFuzzer's coverage and AddressSanitizer for the modules
// the fuzz inputs drive (the frame decoder, the daemon's sessions, its core, its loop, the activity rules it applies
// and the fuzz targets themselves); the others are compiled as in a debug build (cheaper: the instrumentation is
// part of every compile). Every other build leaves these empty.
let fuzzBuild = Context.environment["LIVEBUS_FUZZ_BUILD"] == "1"
let fuzzed: [SwiftSetting] = fuzzBuild ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []
let fuzzTarget: [SwiftSetting] = fuzzBuild ? [.unsafeFlags(["-sanitize=fuzzer,address"]), .define("LIVEBUS_FUZZ")] : []
let fuzzLink: [LinkerSetting] = fuzzBuild ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []

let package = Package(
    name: "LiveBus",
    products: [
        .executable(name: "livebusd", targets: ["livebusd"]),
        .executable(name: "livebus", targets: ["livebus"]),
        // LiveBus inside your own tests (README "LiveBus in your own tests"): the daemon on the embedded loop, the
        // backend, the Activity rules and the layout engine on one virtual clock.
        .library(name: "LiveBusTesting", targets: ["LiveBusTesting"]),
    ],
    targets: [
        // MARK: - C libraries (Debian packages, found with pkg-config)
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(name: "CHarfBuzz", pkgConfig: "harfbuzz", providers: [.apt(["libharfbuzz-dev"])]),
        // zlib's CRC-32 (slice-by-N, and crc32_combine_op so fan-out reuses an event's shared checksum).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The dashboard's HTTP server on the daemon's libuv loop (issue 21; README "Dashboard" says why this one).
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev", "libwebsockets-evlib-uv"])]
        ),

        // MARK: - Pure rule targets (no sockets, no real clock)
        .target(name: "LiveBusWire", dependencies: ["CZlib"], swiftSettings: fuzzed),
        .target(name: "LiveBusClock", swiftSettings: fuzzed),
        .target(name: "LiveBusSimulator", dependencies: ["LiveBusClock"]),
        .target(name: "LiveBusScheduler", dependencies: ["LiveBusClock"]),
        .target(
            name: "LiveBusActivity",
            dependencies: ["LiveBusClock", "LiveBusSimulator"],
            // The built-in delivery activity schema; Protocol/activity-schemas/delivery.json links to it.
            resources: [.copy("Resources/delivery.json")],
            swiftSettings: fuzzed
        ),
        // Network faults on demand: toxiproxy-named toxics applied to a session's byte and frame stream (pure).
        .target(name: "LiveBusFaults"),
        // End-to-end scenario files and the invariant checker over clients' JSON-lines logs (pure; reuses the
        // simulator's line-tracking JSON reader for file:line:field errors).
        .target(name: "LiveBusScenario", dependencies: ["LiveBusSimulator", "LiveBusLayout"]),
        .target(name: "LiveBusLayout", resources: [.copy("Resources/devices.json")]),
        // The bus without I/O: the store protocol and its conformance suite, the in-memory store, the topic →
        // subscribers index, the group commit of one loop turn, the transport seam (loop, connection, timer) and the
        // embedded driver on virtual time, EmbeddedBus (../shared/DESIGN.md "The core and its adapters").
        .target(name: "LiveBusCore", dependencies: ["LiveBusWire", "LiveBusClock"], swiftSettings: fuzzed),

        // Real text measurement (FreeType + HarfBuzz with a Hangul-covering Debian font) for the layout engine.
        .target(name: "LiveBusText", dependencies: ["LiveBusLayout", "CFreeType", "CHarfBuzz"]),

        // MARK: - I/O and composition
        .target(name: "LiveBusLoop", dependencies: ["CLibUV"], swiftSettings: fuzzed),
        .target(
            name: "LiveBusDaemon",
            dependencies: [
                "LiveBusWire", "LiveBusCore", "LiveBusLoop", "LiveBusClock", "LiveBusSimulator", "LiveBusScheduler",
                "LiveBusActivity", "LiveBusLayout", "LiveBusFaults", "CSQLite",
                "CLibWebSockets", "LiveBusClient", "LiveBusAPNs", "LiveBusAPNsServer", "LiveBusFederation",
            ],
            swiftSettings: fuzzed
        ),
        .target(
            name: "LiveBusClient",
            dependencies: [
                "LiveBusWire", "LiveBusLoop", "LiveBusClock", "LiveBusSimulator", "LiveBusActivity", "LiveBusLayout",
                "LiveBusText", "LiveBusAPNs",
            ]
        ),

        // MARK: - Command line (help, arguments, exit codes, JSON envelopes; tested by running the binaries)
        .target(
            name: "LiveBusCLI",
            dependencies: [
                "LiveBusDaemon", "LiveBusClient", "LiveBusLayout", "LiveBusText", "LiveBusActivity", "LiveBusWire",
                "LiveBusLoop", "LiveBusScenario", "LiveBusAPNs", "LiveBusAPNsServer", "LiveBusFaults",
                "LiveBusSimulator",
            ]
        ),

        // MARK: - Fuzzing (tools/fuzz: libFuzzer over the frame decoder and over whole daemon sessions)
        .systemLibrary(name: "CFuzzerDriver"),
        .executableTarget(
            name: "LiveBusFuzz",
            dependencies: ["LiveBusDaemon", "LiveBusWire", "LiveBusLoop", "LiveBusClock", "CFuzzerDriver"],
            swiftSettings: fuzzTarget,
            linkerSettings: fuzzLink
        ),

        // MARK: - Executables (wiring only)
        .executableTarget(name: "livebusd", dependencies: ["LiveBusCLI"]),
        .executableTarget(name: "livebus", dependencies: ["LiveBusCLI"]),

        // MARK: - APNs provider API (issue 17): OpenSSL for ES256 provider tokens and TLS; the request model and
        // APNs's validation are pure (no sockets, no clock of their own).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .target(name: "LiveBusAPNs", dependencies: ["LiveBusClock", "COpenSSL"]),
        // The endpoint: nghttp2 sessions fed by the libuv loop's streams, TLS over OpenSSL memory BIOs, its CA.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .target(name: "LiveBusAPNsServer", dependencies: ["LiveBusAPNs", "LiveBusLoop", "CNghttp2", "COpenSSL"]),

        // MARK: - Tests
        .testTarget(name: "LiveBusWireTests", dependencies: ["LiveBusWire"]),
        .testTarget(name: "LiveBusCoreTests", dependencies: ["LiveBusCore", "LiveBusWire"]),
        // The daemon in-process: its session limits, the SQLite store against the core's store conformance suite, and
        // the session protocol (handshake, malformed frames, probes, resume, slow consumer, limits) on EmbeddedDaemon.
        .testTarget(
            name: "LiveBusDaemonTests",
            dependencies: ["LiveBusDaemon", "LiveBusCore", "LiveBusWire", "LiveBusAPNs", "LiveBusScheduler"]
        ),
        .testTarget(name: "LiveBusClockTests", dependencies: ["LiveBusClock"]),
        .testTarget(name: "LiveBusSimulatorTests", dependencies: ["LiveBusSimulator"]),
        .testTarget(name: "LiveBusSchedulerTests", dependencies: ["LiveBusScheduler"]),
        .testTarget(name: "LiveBusActivityTests", dependencies: ["LiveBusActivity"]),
        .testTarget(name: "LiveBusScenarioTests", dependencies: ["LiveBusScenario"]),
        .testTarget(name: "LiveBusFaultsTests", dependencies: ["LiveBusFaults"]),
        .testTarget(name: "LiveBusLayoutTests", dependencies: ["LiveBusLayout"]),
        .testTarget(name: "LiveBusTextTests", dependencies: ["LiveBusText", "LiveBusLayout"]),
        .testTarget(name: "LiveBusLoopTests", dependencies: ["LiveBusLoop"]),
        .testTarget(
            name: "LiveBusE2ETests",
            dependencies: [
                "LiveBusDaemon", "LiveBusCore", "LiveBusClient", "LiveBusWire", "LiveBusLoop", "LiveBusClock",
                "LiveBusCLI", "LiveBusAPNs", "LiveBusFederation",
            ],
            exclude: ["Snapshots"]
        ),

        // MARK: - Library product for users' tests (issue 20)
        .target(
            name: "LiveBusTesting",
            dependencies: [
                "LiveBusActivity", "LiveBusLayout", "LiveBusSimulator", "LiveBusClock", "LiveBusDaemon", "LiveBusCore",
                "LiveBusWire", "LiveBusClient",
            ]
        ),
        .testTarget(name: "LiveBusTestingTests", dependencies: ["LiveBusTesting"]),
        .testTarget(name: "LiveBusAPNsTests", dependencies: ["LiveBusAPNs", "LiveBusClock", "COpenSSL"]),

        // MARK: - Federation through NATS JetStream (issue 19): libnats' synchronous API on the store's own threads
        .systemLibrary(name: "CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),
        .target(name: "LiveBusFederation", dependencies: ["LiveBusCore", "LiveBusWire", "CNATS", "COpenSSL"]),
        .testTarget(
            name: "LiveBusFederationTests",
            dependencies: ["LiveBusFederation", "LiveBusCore", "LiveBusLoop", "LiveBusWire"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
