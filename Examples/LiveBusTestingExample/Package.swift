// swift-tools-version:6.0
// A team's own test package using LiveBus's test library, as README "LiveBus in your own tests" shows. CI (tools/test)
// builds and runs it from here, as an outside user would: `swift test` in this directory.
import PackageDescription

let package = Package(
    name: "LiveBusTestingExample",
    dependencies: [
        // By path here; a team outside this repository writes .package(url: "…/LiveBus.git", branch: "main").
        .package(name: "LiveBus", path: "../..")
    ],
    targets: [
        .testTarget(
            name: "DeliveryTests",
            dependencies: [.product(name: "LiveBusTesting", package: "LiveBus")]
        )
    ],
    swiftLanguageModes: [.v6]
)
