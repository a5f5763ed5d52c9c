// swift-tools-version:6.0
// Layout throughput benchmark for tools/bench. Builds the repo's LiveBusLayout sources through the
// symlink Sources/LiveBusLayout -> ../../../../Sources/LiveBusLayout; adds nothing to the main package.
import PackageDescription

let package = Package(
    name: "LayoutBench",
    targets: [
        .target(name: "LiveBusLayout", resources: [.copy("Resources/devices.json")]),
        .executableTarget(
            name: "LayoutBench",
            dependencies: ["LiveBusLayout"],
            swiftSettings: [.unsafeFlags(["-Ounchecked"], .when(configuration: .debug))]
        ),
    ],
    swiftLanguageModes: [.v6]
)
