/// The rules for a session name (HELLO `name`, `livebus attach --name`), in one place for the daemon and the CLI.
///
/// Source: Protocol/PROTOCOL.md §4.1. Names go into logs, status tables and file names, and commands address
/// sessions by name, by id (`s1`, `s2`, …), by `all` or by `current` (§8): a name that could be read as one of those
/// would let a phone capture commands meant for others.
public enum SessionName {
    /// Names that address sessions in commands and so cannot name one.
    public static let reservedWords: Set<String> = ["all", "current"]

    /// Why `name` cannot name a session, or `nil` when it can.
    ///
    /// Refused: empty or longer than 64 bytes, control, format or whitespace characters, `all`, `current`, and
    /// names of the form `s<digits>` (the daemon's session ids).
    public static func problem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 64,
            !name.unicodeScalars.contains(where: {
                $0.properties.generalCategory == .control || $0.properties.isWhitespace
                    || $0.properties.generalCategory == .format
            })
        else {
            return "must be 1–64 bytes of printable characters without spaces"
        }
        if reservedWords.contains(name) {
            return "'\(name)' is reserved: commands use it to address sessions (all, current); choose another name"
        }
        if isSessionID(name) {
            return
                "'\(name)' has the form of a session id (s<digits>), which commands use to address a connection; choose another name"
        }
        return nil
    }

    /// Whether `name` has the form of a daemon session id: `s` followed by one or more ASCII digits.
    public static func isSessionID(_ name: String) -> Bool {
        let u = Array(name.utf8)
        return u.count >= 2 && u[0] == UInt8(ascii: "s") && u.dropFirst().allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }
}
