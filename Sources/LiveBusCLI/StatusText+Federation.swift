import Foundation
import LiveBusWire

extension StatusText {
    /// The `FEDERATION` block of `status` on a federated daemon (`livebusd --federate`), else "".
    /// - Parameter d: The `status` data; its `federation` field is `null` or the daemon's `federationStatus()`.
    /// - Returns: The block, ending with a blank line, or "".
    static func federation(_ d: JSONValue) -> String {
        guard let f = d["federation"], f != .null else { return "" }
        let state = f["state"]?.stringValue ?? "?"
        if state == "unjoined" {
            return
                "FEDERATION not joined yet (--federate-optional): PUBLISH is refused until NATS answers\n  phones told: degraded\n\n"
        }
        var s = "FEDERATION \(state)"
        if let server = f["server"]?.stringValue { s += " to \(server)" }
        s += " · stream \(f["stream"]?.stringValue ?? "?")"
        if f["replicas"] != nil {
            s +=
                " R\(Int(num(f["replicas"]))) · \(Int(num(f["messages"]))) messages, last \(Int(num(f["lastSequence"])))"
            s += " · consumer lag \(Int(num(f["lag"])))"
        }
        s += "\n"
        // What SYNC tells the phones (PROTOCOL.md §5.9), when it is not live.
        switch f["sync"]?.stringValue {
        case "degraded"?:
            s += "  phones told: degraded (their replicas may be behind; they keep what they have)\n"
        case "catchingUp"?:
            s += "  phones told: catchingUp (the consumer is taking what it missed)\n"
        default: break
        }
        // The stream's state below is what JetStream last answered: while the link is down it is old, not current.
        if state != "connected", let ago = f["readAgoMs"]?.doubleValue {
            s +=
                "  stale: last read \(age(Int64(ago))) ago, the link is \(state); the leader and peers below may have changed\n"
        }
        if let leader = f["leader"]?.stringValue {
            s += "  cluster \(f["cluster"]?.stringValue ?? "?") · leader \(leader)\n"
        }
        if case .array(let peers)? = f["peers"] {
            for p in peers {
                let where_ =
                    p["offline"]?.boolValue == true
                    ? "offline" : (p["current"]?.boolValue == true ? "current" : "behind")
                s +=
                    "  peer \(p["name"]?.stringValue ?? "?"): \(where_), lag \(Int(num(p["lag"]))), seen \(age(Int64(num(p["activeMs"])))) ago\n"
            }
        }
        if case .array(let servers)? = f["servers"], !servers.isEmpty {
            s += "  servers \(servers.compactMap(\.stringValue).joined(separator: ", "))\n"
        }
        return s + "\n"
    }

    /// An age in milliseconds as the duration flags write it: `579ms` under a second, else whole seconds (`17m14s`).
    static func age(_ milliseconds: Int64) -> String {
        let ms = max(0, milliseconds)
        return ms < 1000 ? "\(ms)ms" : spokenDuration(ms / 1000 * 1000)
    }
}
