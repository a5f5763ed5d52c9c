// swift-tools-version:6.0
// Per-delivery cost of EVENT encoding for tools/bench and issue 15: instructions (run it under callgrind) and heap
// allocations (counted by CMallocCount, which interposes malloc & co. in this executable only). Builds the repo's
// LiveBusWire sources through the symlinks Sources/LiveBusWire and Sources/CZlib; adds nothing to the main package.
import PackageDescription

let package = Package(
    name: "WireBench",
    targets: [
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "LiveBusWire", dependencies: ["CZlib"]),
        .target(name: "CMallocCount"),
        .executableTarget(name: "WireBench", dependencies: ["LiveBusWire", "CMallocCount"]),
    ],
    swiftLanguageModes: [.v6]
)
