import Foundation
import LiveBusLoop

/// How many terminal cells text takes, and whether and how large the live views may draw.
///
/// Cell widths are the C library's `wcwidth(3)` under the `C.UTF-8` character type (glibc follows Unicode's East
/// Asian Width: Hangul syllables and jamo, CJK and emoji 2; box drawing, Latin, ⟦ ⟧ 1; combining marks 0), set per
/// thread with `uselocale` so nothing else of the process changes. Without that locale, the same rule for the ranges
/// our views print (Hangul, CJK, full-width forms, emoji) is applied.
enum TerminalText {
    /// Cells of one scalar: 0, 1 or 2 (a control character counts 0).
    static func cells(_ u: Unicode.Scalar) -> Int {
        if u.value < 0x7F { return u.value < 0x20 ? 0 : 1 }
        if let w = libcWidth(u) { return w }
        return fallbackWidth(u)
    }

    /// Cells of a string: the sum over its scalars.
    static func columns(_ s: some StringProtocol) -> Int {
        s.unicodeScalars.reduce(0) { $0 + cells($1) }
    }

    /// The longest prefix of `s` that fits `width` cells, ending with `…` when something was cut.
    static func truncate(_ s: String, to width: Int) -> String {
        guard columns(s) > width else { return s }
        guard width > 0 else { return "" }
        var out = ""
        var used = 0
        for ch in s {
            let w = columns(String(ch))
            if used + w > width - 1 { break }
            out.append(ch)
            used += w
        }
        return out + "…"
    }

    /// `s` cut to `width` cells and padded with spaces to exactly `width`.
    static func fit(_ s: String, width: Int) -> String {
        let t = truncate(s, to: width)
        return t + String(repeating: " ", count: max(0, width - columns(t)))
    }

    /// Whether a live view may repaint the screen: standard output is a terminal and `TERM` is not `dumb` (or
    /// unset). Otherwise the views print plain lines, once per change.
    static var mayRepaint: Bool {
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        return InputReader.outputIsTerminal && !term.isEmpty && term != "dumb"
    }

    /// The terminal's size (columns, rows) from `TIOCGWINSZ`, else `$COLUMNS`/`$LINES`, else 80×24.
    static var size: (columns: Int, rows: Int) {
        var ws = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return (Int(ws.ws_col), Int(ws.ws_row))
        }
        let env = ProcessInfo.processInfo.environment
        return (Int(env["COLUMNS"] ?? "") ?? 80, Int(env["LINES"] ?? "") ?? 24)
    }

    /// Keeps `lines` within `rows`: the first `head` lines (the box's title and sync line) and the last `tail`
    /// (the bottom border, key help) stay; what does not fit between them becomes one line saying how many were
    /// left out, made by `more`.
    static func fitRows(_ lines: [String], rows: Int, head: Int, tail: Int, more: (Int) -> String) -> [String] {
        guard lines.count > rows, rows > head + tail else { return lines }
        let room = rows - head - tail - 1
        let hidden = lines.count - head - tail - room
        return Array(lines.prefix(head)) + Array(lines.dropFirst(head).prefix(room)) + [more(hidden)]
            + Array(lines.suffix(tail))
    }

    // MARK: - wcwidth

    /// Created once, never freed or changed (a read-only handle; `uselocale` is per thread).
    nonisolated(unsafe) private static let utf8Locale: locale_t? = newlocale(LC_CTYPE_MASK, "C.UTF-8", nil)

    private static func libcWidth(_ u: Unicode.Scalar) -> Int? {
        guard let loc = utf8Locale else { return nil }
        let previous = uselocale(loc)
        defer { uselocale(previous) }
        let w = libcWCWidth(wchar_t(bitPattern: u.value))
        return w < 0 ? 0 : Int(w)
    }

    /// East Asian Wide and Fullwidth ranges (Unicode 15 EastAsianWidth.txt, the parts a view prints), else 1;
    /// combining marks 0.
    static func fallbackWidth(_ u: Unicode.Scalar) -> Int {
        let v = u.value
        if (0x0300...0x036F).contains(v) || (0x1160...0x11FF).contains(v) || v == 0x200B
            || (0xFE00...0xFE0F).contains(v)
        {
            return 0
        }
        let wide: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA960...0xA97F,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
            0x1F900...0x1F9FF, 0x20000...0x3FFFD,
        ]
        return wide.contains { $0.contains(v) } ? 2 : 1
    }
}

/// glibc's `int wcwidth(wchar_t)` (wchar.h under _XOPEN_SOURCE, which the Glibc module does not expose).
@_silgen_name("wcwidth")
private func libcWCWidth(_ c: wchar_t) -> Int32
