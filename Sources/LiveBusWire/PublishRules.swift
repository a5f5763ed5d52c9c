/// The values PROTOCOL.md §5.1 allows in a PUBLISH body beyond its JSON types and instants (which
/// ``EventJSON`` and ``EventBody/validate()`` check): the daemon refuses any other with a non-fatal ERROR
/// `invalidBody` naming the field, its value and what is allowed, before anything is stored or numbered.
///
/// Only PUBLISH is held to them: an EVENT or a stored body is read as it is (a data directory written before these
/// rules still loads, a phone still applies what an older daemon sent).
/// Sources: PROTOCOL.md §5.1; Apple, "The dynamic data of a Live Activity that's encoded by `ContentState` can't
/// exceed 4KB" (https://developer.apple.com/documentation/activitykit/activityattributes/contentstate); APNs
/// `apns-priority` 10 and 5 ("Sending notification requests to APNs").
public enum PublishRules {
    /// `event`: the Live Activity push events.
    public static let events = ["start", "update", "end"]
    /// `contentState.status`: the order statuses (LiveBusSimulator's `OrderStatus` raw values), in order.
    public static let statuses = [
        "created", "cooking", "awaitingPickup", "pickedUp", "delivering", "delivered", "canceled",
    ]
    /// `contentState.progress`: the share of the delivery done.
    public static let progress: ClosedRange<Double> = 0...1
    /// `priority`: APNs priorities, 10 (status or ETA changed) and 5 (rider position only).
    public static let priorities = [10, 5]
    /// The largest `contentState`, as the bytes of its canonical JSON encoding (what ``EventJSON/encode(_:)``
    /// writes for it, and what phones are sent): Apple's ActivityKit limit.
    public static let maximumContentStateBytes = 4096

    /// Checks a decoded PUBLISH body against the rules.
    /// - Parameters:
    ///   - body: The body, decoded by ``EventJSON/decodePublish(_:)-(UnsafeRawBufferPointer)``.
    ///   - contentStateBytes: The size of its content state's canonical encoding, bytes (what `decodePublish`
    ///     returns).
    /// - Throws: ``WireError`` `invalidBody` for the first value outside its rule, e.g. `PUBLISH body: field
    ///   'contentState.progress' is 7, outside 0…1 (PROTOCOL.md §5.1); nothing was stored: publish it again with
    ///   the value fixed`.
    /// - Complexity: a few compares of short strings and numbers; no allocation unless it throws.
    public static func check(_ body: EventBody, contentStateBytes: Int) throws(WireError) {
        guard events.contains(body.event) else {
            throw refusal("event", "is \(quoted(body.event)), not one of \(events.joined(separator: ", "))")
        }
        let c = body.contentState
        guard statuses.contains(c.status) else {
            throw refusal(
                "contentState.status",
                "is \(quoted(c.status)), not one of \(statuses.joined(separator: ", "))"
            )
        }
        guard progress.contains(c.progress) else {
            throw refusal("contentState.progress", "is \(number(c.progress)), outside 0…1")
        }
        guard priorities.contains(body.priority) else {
            throw refusal(
                "priority",
                "is \(body.priority), not 10 (status or ETA changed) or 5 (rider position only)"
            )
        }
        guard contentStateBytes <= maximumContentStateBytes else {
            throw WireError(
                .invalidBody,
                "PUBLISH body: field 'contentState' is \(contentStateBytes) bytes as JSON, over the "
                    + "\(maximumContentStateBytes)-byte limit of a Live Activity's content state (Apple's "
                    + "ActivityKit; PROTOCOL.md §5.1); nothing was stored: shorten the summary texts and publish again"
            )
        }
    }

    private static func refusal(_ field: String, _ what: String) -> WireError {
        WireError(
            .invalidBody,
            "PUBLISH body: field '\(field)' \(what) (PROTOCOL.md §5.1); nothing was stored: publish it again with "
                + "the value fixed"
        )
    }

    /// A string value for a message: quoted, cut after 64 characters.
    private static func quoted(_ s: String) -> String {
        s.count <= 64 ? "'\(s)'" : "'\(s.prefix(64))…' (\(s.utf8.count) bytes)"
    }

    /// A number as JSON writes it: `7`, not `7.0`.
    private static func number(_ v: Double) -> String {
        v.rounded() == v && abs(v) < 9_007_199_254_740_992 ? "\(Int64(v))" : "\(v)"
    }
}

extension EventJSON {
    /// Decodes a PUBLISH body as ``decodeCanonical(_:)-(UnsafeRawBufferPointer)`` does, and measures its content
    /// state for ``PublishRules/check(_:contentStateBytes:)``: a canonical body's while it is read (the slice of
    /// `raw`), another's by encoding the content state (the general reader's path, which is slower anyway).
    /// - Returns: The body; whether `raw` is its canonical encoding (then store and fan out `raw`); the size of the
    ///   content state's canonical encoding, bytes.
    /// - Throws: ``WireError`` `invalidBody` for an empty body, or `invalidBody` or `invalidValue` for a body that
    ///   does not decode (as `decodeCanonical`); the rules are not checked here.
    public static func decodePublish(_ raw: UnsafeRawBufferPointer) throws(WireError) -> (
        body: EventBody, isCanonical: Bool, contentStateBytes: Int
    ) {
        if raw.isEmpty {
            throw WireError(
                .invalidBody,
                "PUBLISH body is empty: a PUBLISH carries an event body, a JSON object with event, timestamp and contentState (PROTOCOL.md §5.1)"
            )
        }
        if let (body, size) = canonicalMeasured(raw) {
            try body.validate()
            return (body, true, size)
        }
        let body = try decodeGeneral(raw, what: "PUBLISH")
        return (body, false, try contentStateBytes(body.contentState))
    }

    /// Decodes a PUBLISH body (see ``decodePublish(_:)-(UnsafeRawBufferPointer)``).
    /// - Throws: as ``decodePublish(_:)-(UnsafeRawBufferPointer)``.
    public static func decodePublish(_ bytes: [UInt8]) throws(WireError) -> (
        body: EventBody, isCanonical: Bool, contentStateBytes: Int
    ) {
        let r: Result<(body: EventBody, isCanonical: Bool, contentStateBytes: Int), WireError> = bytes.withUnsafeBytes {
            raw in
            do throws(WireError) { return .success(try decodePublish(raw)) } catch { return .failure(error) }
        }
        return try r.get()
    }

    /// The size of `c`'s canonical JSON encoding (as a PUBLISH or EVENT body's `contentState` member), bytes.
    /// - Throws: ``WireError`` `invalidBody` for a non-finite number.
    public static func contentStateBytes(_ c: ContentStateBody) throws(WireError) -> Int {
        var w = JSONWriter()
        w.out.reserveCapacity(256)
        try w.contentState(c)
        return w.out.count
    }
}
