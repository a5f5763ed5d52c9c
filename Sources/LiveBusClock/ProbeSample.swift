/// One clock probe exchange, as NTP's on-wire protocol stamps it (RFC 5905 §8).
///
/// The daemon sends PING stamped `serverSend` (t1, server clock); the client stamps `clientReceive` (t2) and
/// `clientSend` (t3) on its own clock and answers PONG; the daemon stamps `serverReceive` (t4, server clock).
/// All four are integer milliseconds since the Unix epoch, each on its own clock.
/// - Note: Source: RFC 5905 §8 "On-Wire Protocol" (offset θ = ((t2−t1)+(t3−t4))/2, delay δ = (t4−t1)−(t3−t2)).
public struct ProbeSample: Sendable, Equatable {
    /// t1: when the daemon sent PING, server clock, ms.
    public var serverSend: ServerInstant
    /// t2: when the client received PING, client clock, ms.
    public var clientReceive: ClientInstant
    /// t3: when the client sent PONG, client clock, ms.
    public var clientSend: ClientInstant
    /// t4: when the daemon received PONG, server clock, ms.
    public var serverReceive: ServerInstant

    /// Creates a sample from the four timestamps of one PING/PONG exchange.
    /// - Parameters:
    ///   - serverSend: t1, server clock, ms.
    ///   - clientReceive: t2, client clock, ms.
    ///   - clientSend: t3, client clock, ms.
    ///   - serverReceive: t4, server clock, ms.
    public init(
        serverSend: ServerInstant,
        clientReceive: ClientInstant,
        clientSend: ClientInstant,
        serverReceive: ServerInstant
    ) {
        self.serverSend = serverSend
        self.clientReceive = clientReceive
        self.clientSend = clientSend
        self.serverReceive = serverReceive
    }

    /// θ = ((t2 − t1) + (t3 − t4)) / 2: this sample's offset of the client clock from the server clock
    /// (client − server), ms. Exact when the two one-way delays are equal; otherwise off by half their difference.
    /// - Note: Source: RFC 5905 §8.
    public var offsetMilliseconds: Double {
        // In Double: the differences of two arbitrary Int64 stamps may not fit in an Int64.
        let up = Double(clientReceive.millisecondsSinceEpoch) - Double(serverSend.millisecondsSinceEpoch)
        let down = Double(clientSend.millisecondsSinceEpoch) - Double(serverReceive.millisecondsSinceEpoch)
        return (up + down) / 2
    }

    /// δ = (t4 − t1) − (t3 − t2): the round-trip delay without the client's turnaround time, ms.
    /// Saturates at the ends of `Int64` instead of trapping (stamps out of PROTOCOL.md §3's range).
    /// - Note: Source: RFC 5905 §8.
    public var roundTripMilliseconds: Int64 {
        serverSend.milliseconds(to: serverReceive).saturatingSubtracting(clientReceive.milliseconds(to: clientSend))
    }

    /// The server-clock midpoint of the exchange, (t1 + t4) / 2, ms since the Unix epoch: the instant the sample's
    /// offset is attributed to.
    public var serverMidpointMilliseconds: Double {
        (Double(serverSend.millisecondsSinceEpoch) + Double(serverReceive.millisecondsSinceEpoch)) / 2
    }
}
