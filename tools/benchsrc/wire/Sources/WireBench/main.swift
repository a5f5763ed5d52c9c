// WireBench: what one delivered EVENT costs the daemon's encoder, and what one published event costs.
//
//   WireBench deliver N   encodes N deliveries of one event (each with its own flags and trailer) into one reused
//                         64 KiB output buffer, emptied (capacity kept) when full, as a connection's flush does
//   WireBench publish N   decodes, validates and re-encodes N PUBLISH bodies and builds each event's template
//
// It prints one JSON line: the mode, N, heap allocations counted during the N (after a warm-up of 1000), and a
// checksum of the output (so that nothing is optimised away). Instructions per operation: run it under
// `valgrind --tool=callgrind` for two values of N and divide the difference by the difference of N.
import CMallocCount
import Glibc
import LiveBusWire

let body = EventBody(
    event: "update",
    timestamp: 1_767_225_600_000,
    contentState: ContentStateBody(
        status: "delivering",
        summary: SummaryBody(
            ko: "배달 중",
            en: "On the way",
            detailKo: "라이더가 가고 있어요",
            detailEn: "Your rider is on the way"
        ),
        etaTarget: 1_767_226_800_000,
        progress: 0.625,
        riderPosition: PositionBody(latitude: 37.4979, longitude: 127.0276),
        lastConfirmed: 1_767_225_600_000
    ),
    staleDate: 1_767_225_900_000,
    relevanceScore: 50,
    dismissalDate: nil,
    priority: 10
)

let arguments = CommandLine.arguments.dropFirst()
let mode = arguments.first ?? "deliver"
let n = arguments.dropFirst().first.flatMap { Int($0) } ?? 10_000

func deliver(_ template: EventTemplate, count: Int, into buffer: inout [UInt8], checksum: inout UInt64) {
    for i in 0..<count {
        if buffer.count + template.frameSize > 65536 {
            checksum &+= UInt64(buffer[20])
            buffer.removeAll(keepingCapacity: true)
        }
        let offset = Int64(90_000 + i & 0xFF)
        let trailer = EventTrailer(
            timestamp: 1_767_225_600_000 + offset,
            etaTarget: 1_767_226_800_000 + offset,
            lastConfirmed: 1_767_225_600_000 + offset,
            staleDate: 1_767_225_900_000 + offset,
            dismissalDate: nil,
            uncertaintyMs: UInt32(i & 7)
        )
        let flags: FrameFlags = i & 15 == 0 ? [.replay] : []
        // swift-format-ignore: NeverUseForceTry
        try! Frame.appendEvent(template, flags: flags, trailer: trailer, into: &buffer)
    }
}

var checksum: UInt64 = 0
let allocations: UInt64
switch mode {
case "deliver":
    // swift-format-ignore: NeverUseForceTry
    let template = try! EventTemplate(topic: "orders/A1001", sequence: 42, body: EventJSON.encode(body))
    var buffer: [UInt8] = []
    buffer.reserveCapacity(65536)
    deliver(template, count: 1000, into: &buffer, checksum: &checksum)  // warm-up: the buffer reaches its size
    let before = livebus_malloc_count()
    deliver(template, count: n, into: &buffer, checksum: &checksum)
    allocations = livebus_malloc_count() - before
case "publish":
    // swift-format-ignore: NeverUseForceTry
    let published = try! WireJSON.encode(body)  // what a publisher sends (sorted keys, as the CLI writes it)
    func publish(_ count: Int) {
        for i in 0..<count {
            guard let b = try? EventJSON.decode(published), let bytes = try? EventJSON.encode(b),
                let t = try? EventTemplate(topic: "orders/A1001", sequence: UInt64(i), body: bytes)
            else { fatalError("the benchmark's body did not decode") }
            checksum &+= UInt64(t.prefixCRC) &+ UInt64(EventJSON.ackBody(sequence: UInt64(i)).count)
        }
    }
    publish(1000)
    let before = livebus_malloc_count()
    publish(n)
    allocations = livebus_malloc_count() - before
default:
    print("usage: WireBench deliver|publish [N]")
    exit(2)
}
print(
    "{\"mode\":\"\(mode)\",\"n\":\(n),\"allocations\":\(allocations),\"allocationsPerOperation\":\(Double(allocations) / Double(max(n, 1))),\"checksum\":\(checksum)}"
)
