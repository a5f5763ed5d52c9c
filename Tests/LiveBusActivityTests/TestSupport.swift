import LiveBusActivity
import LiveBusClock
import LiveBusSimulator

/// T0 = 2026-01-01T00:00:00Z in Unix milliseconds (push-payloads.md).
let t0Milliseconds: Int64 = 1_767_225_600_000

/// A server instant `seconds` (plus `milliseconds`) after T0.
func server(_ seconds: Int64, ms milliseconds: Int64 = 0) -> ServerInstant {
    ServerInstant(millisecondsSinceEpoch: t0Milliseconds + seconds * 1000 + milliseconds)
}

/// A client instant `seconds` (plus `milliseconds`) after T0 on the client's clock.
func client(_ seconds: Int64, ms milliseconds: Int64 = 0) -> ClientInstant {
    ClientInstant(millisecondsSinceEpoch: t0Milliseconds + seconds * 1000 + milliseconds)
}

/// A client clock that reads the server's clock plus `skewMilliseconds`.
struct Skew {
    var skewMilliseconds: Int64 = 0

    func toClient(_ instant: ServerInstant) -> ClientInstant {
        ClientInstant(millisecondsSinceEpoch: instant.millisecondsSinceEpoch + skewMilliseconds)
    }

    /// The client instant when the server reads T0 + `seconds`.
    func client(_ seconds: Int64, ms milliseconds: Int64 = 0) -> ClientInstant {
        toClient(server(seconds, ms: milliseconds))
    }
}

/// An update for order `A1001` with everything on server-relative seconds, converted by `skew`.
func update(
    _ orderID: String = "A1001",
    event: ActivityEventKind = .update,
    at seconds: Int64,
    ms milliseconds: Int64 = 0,
    status: OrderStatus = .cooking,
    eta etaSeconds: Int64 = 1200,
    stale staleSeconds: Int64? = nil,
    dismissal dismissalSeconds: Int64? = nil,
    relevance: Double = 0,
    contentStateByteCount: Int? = nil,
    skew: Skew = Skew()
) -> ActivityUpdate {
    let content = ContentState(
        status: status,
        etaTarget: server(etaSeconds),
        progress: 0.25,
        lastConfirmed: server(seconds)
    )
    return ActivityUpdate(
        orderID: orderID,
        event: event,
        timestamp: server(seconds, ms: milliseconds),
        timestampInClientClock: skew.toClient(server(seconds, ms: milliseconds)),
        content: content,
        etaTarget: skew.toClient(server(etaSeconds)),
        staleDate: staleSeconds.map { skew.toClient(server($0)) },
        dismissalDate: dismissalSeconds.map { skew.toClient(server($0)) },
        relevanceScore: relevance,
        contentStateByteCount: contentStateByteCount
    )
}

/// A board with one activity for `A1001` started at T0 (client clock = server clock unless `skew` says otherwise).
func startedBoard(
    stale staleSeconds: Int64? = nil,
    profile: DeviceProfile = DeviceProfile(),
    skew: Skew = Skew()
) -> ActivityBoard {
    var board = ActivityBoard(profile: profile)
    let verdict = board.orderCreated(
        update(event: .start, at: 0, stale: staleSeconds, skew: skew),
        origin: .orderCreation,
        at: skew.client(0)
    )
    precondition(verdict.applied, "fixture start failed: \(verdict)")
    return board
}

/// UTF-8 bytes of a JSON text.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

let hourMilliseconds: Int64 = 3_600_000
