import LiveBusCore
import LiveBusWire

extension Daemon {
    /// The most topic names one `topic.list` answer holds: 200 names of at most 255 bytes fit one 64 KiB frame.
    static let topicPageLimit = 200

    /// `topic.list {limit?, offset?}` (Protocol/PROTOCOL.md §8): one page of the store's topics, sorted, with the
    /// total, so `livebus watch --topic` can say whether a pattern matches any topic that exists (published ones
    /// too, not only the simulator's orders). A limit outside 1…200 or an offset that is not a whole number is
    /// refused (`invalidArguments`), not clamped.
    func topicList(_ c: CommandBody, id: UInt64, from s: Session) {
        func page(_ key: String, _ d: Int, _ range: ClosedRange<Double>) -> Int? {
            guard let v = c.args[key] else { return d }
            guard case .number(let n) = v, n == n.rounded(), range.contains(n) else { return nil }
            return Int(n)
        }
        guard let offset = page("offset", 0, 0...9_007_199_254_740_992),
            let limit = page("limit", Self.topicPageLimit, 1...Double(Self.topicPageLimit))
        else {
            replyError(
                s,
                id: id,
                code: "invalidArguments",
                "topic.list: limit must be a whole number 1…\(Self.topicPageLimit) and offset one in 0…2^53",
                recovery: "e.g. {\"limit\": 200, \"offset\": 200}"
            )
            return
        }
        let all = store.topics
        let names = all.dropFirst(offset).prefix(limit).map { JSONValue.string($0) }
        reply(
            s,
            id: id,
            ResultBody(
                ok: true,
                data: .object([
                    "topics": .array(Array(names)), "total": .number(Double(all.count)),
                    "offset": .number(Double(offset)),
                ])
            )
        )
    }
}
