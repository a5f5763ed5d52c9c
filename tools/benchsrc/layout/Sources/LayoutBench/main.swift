// Layouts per second of LayoutEngine.layout over every catalog device × fold state × orientation × screen
// layout, single thread. Usage: LayoutBench [seconds]   (default 3)
import Foundation
import LiveBusLayout

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 3 : 3
let catalog = try DeviceCatalog.bundled()
var inputs: [LayoutInput] = []
var postures = 0
for device in catalog.devices {
    for fold in device.supportedFoldStates {
        for orientation in Orientation.allCases {
            guard let resolved = try? resolve(
                Posture(deviceID: device.id, foldState: fold, orientation: orientation), in: catalog)
            else { continue }
            postures += 1
            for screen in ScreenLayout.allCases {
                inputs.append(
                    LayoutInput(
                        posture: resolved, screen: screen, tags: 6,
                        markers: OfflineLayoutRequest.sampleMarkers, showSheet: true, showToast: false))
            }
        }
    }
}
precondition(!inputs.isEmpty, "no layout inputs")

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

// Warm up, then run for `seconds`; check the clock once per pass over all inputs.
var sink = 0
@MainActor func run(_ inputs: [LayoutInput]) -> (Int, Double) {
    for i in inputs { sink &+= LayoutEngine.layout(i).failedInvariants.count }
    let start = now()
    let deadline = start + UInt64(seconds * 1e9)
    var count = 0
    var t = start
    while t < deadline {
        for i in inputs { sink &+= LayoutEngine.layout(i).failedInvariants.count }
        count += inputs.count
        t = now()
    }
    return (count, Double(t - start) / 1e9)
}
// Full scene: map markers, tag sheet (6 tags), all three screen layouts.
let (count, elapsed) = run(inputs)
// Bare: the same postures and screens without markers or sheet.
let bare = inputs.map { LayoutInput(posture: $0.posture, screen: $0.screen) }
let (bareCount, bareElapsed) = run(bare)
print(
    "layout devices=\(catalog.devices.count) postures=\(postures) inputs=\(inputs.count) layouts=\(count) "
        + "seconds=\(String(format: "%.3f", elapsed)) layouts_per_s=\(Int(Double(count) / elapsed)) "
        + "bare_layouts_per_s=\(Int(Double(bareCount) / bareElapsed)) failed_invariants=\(sink)")
