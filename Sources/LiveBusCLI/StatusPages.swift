import LiveBusWire

/// The daemon's whole `status`: one answer holds as many sessions as fit in one frame, so the rest are read with
/// `sessionOffset` (Protocol/PROTOCOL.md §10, `status`) until `sessionCount` are in hand.
enum StatusPages {
    /// `status` with every session: the first answer, its `sessions` extended by the later pages (a session seen
    /// twice, because one connected meanwhile, is kept once), and `sessionOffset` 0.
    /// - Parameters:
    ///   - args: The request's other arguments (`explain`).
    ///   - fetch: Asks the daemon for `status` with these arguments (the admin request; a test passes its own).
    /// - Returns: The `status` data with every session that could be read.
    /// - Throws: Whatever `fetch` throws.
    static func all(
        args: [String: JSONValue] = [:],
        fetch: ([String: JSONValue]) throws(CLIError) -> JSONValue
    ) throws(CLIError) -> JSONValue {
        let first = try fetch(args)
        guard case .object(var merged) = first, case .array(var sessions)? = first["sessions"] else { return first }
        var ids = Set(sessions.compactMap { $0["id"]?.stringValue })
        var total = Int(first["sessionCount"]?.doubleValue ?? 0)
        // Each page moves on by what it held; a page holding none (a session larger than a frame) ends it.
        var offset = sessions.count
        while offset < total {
            var a = args
            a["sessionOffset"] = .number(Double(offset))
            let page = try fetch(a)
            guard case .array(let more)? = page["sessions"], !more.isEmpty else { break }
            for s in more where ids.insert(s["id"]?.stringValue ?? "").inserted { sessions.append(s) }
            offset += more.count
            total = Int(page["sessionCount"]?.doubleValue ?? Double(total))
        }
        merged["sessions"] = .array(sessions)
        merged["sessionCount"] = .number(Double(max(total, sessions.count)))
        merged["sessionOffset"] = .number(0)
        return .object(merged)
    }

    /// ``all(args:fetch:)`` over the admin socket.
    static func all(socket: String, args: [String: JSONValue] = [:], timeoutMs: UInt64 = 5000) throws(CLIError)
        -> JSONValue
    {
        try all(args: args) { a throws(CLIError) in
            try LivebusCommand.resultData(
                AdminClient.request(socket: socket, command: "status", args: a, timeoutMs: timeoutMs)
            )
        }
    }
}
