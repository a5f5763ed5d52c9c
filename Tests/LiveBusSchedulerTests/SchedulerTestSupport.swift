import LiveBusClock
import LiveBusScheduler

/// The instant every test starts at (server clock).
let start = ServerInstant(millisecondsSinceEpoch: 1_700_000_000_000)

/// `start` plus `seconds` seconds.
func at(_ seconds: Int64) -> ServerInstant { start.advanced(byMilliseconds: seconds * 1000) }

/// A test update on `topic`, produced at `timestamp` (defaults to `start` plus `sequence` seconds).
func update(
    _ sequence: UInt64,
    topic: String = "orders/A1001",
    priority: Int = 10,
    terminal: Bool = false,
    timestamp: ServerInstant? = nil
) -> PendingUpdate {
    PendingUpdate(
        topic: topic,
        sequence: sequence,
        priority: priority,
        isTerminal: terminal,
        serverTimestamp: timestamp ?? at(Int64(sequence))
    )
}

/// A scheduler in `state` at `start`, with jitter off unless `config` turns it on.
func makeScheduler(
    config: SchedulerConfig = SchedulerConfig(refreshJitterMilliseconds: 0),
    profile: SessionProfile = .default,
    state: AppState = .background,
    seed: UInt64 = 1
) -> RefreshScheduler {
    RefreshScheduler(config: config, profile: profile, seed: seed, now: start, appState: state)
}

/// One delivery reduced to what tests compare: sequence, channel, reason, seconds after `start`.
struct Sent: Equatable, CustomStringConvertible {
    var topic: String
    var sequence: UInt64
    var channel: Channel
    var reason: DecisionReason
    var seconds: Int64

    init(
        _ sequence: UInt64,
        _ channel: Channel,
        _ reason: DecisionReason,
        at seconds: Int64,
        topic: String = "orders/A1001"
    ) {
        self.topic = topic
        self.sequence = sequence
        self.channel = channel
        self.reason = reason
        self.seconds = seconds
    }

    init(_ d: Delivery) {
        self.init(
            d.update.sequence,
            d.channel,
            d.reason,
            at: start.milliseconds(to: d.at) / 1000,
            topic: d.update.topic
        )
    }

    var description: String { "\(topic)#\(sequence) \(channel) \(reason) @\(seconds)s" }
}

extension Array where Element == Delivery {
    /// The deliveries as `Sent` values.
    var sent: [Sent] { map(Sent.init) }
}
