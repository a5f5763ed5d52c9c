import Testing

@testable import LiveBusWire

/// ``CRC32``: the short inputs summed eight bytes per step give zlib's value.
struct CRC32Tests {
    /// Bit by bit, the definition (reflected, polynomial 0xEDB88320, inverted before and after).
    private func reference(_ start: UInt32, _ bytes: [UInt8]) -> UInt32 {
        var c = ~start
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return ~c
    }

    /// The check value of the CRC-32 catalogue ("123456789" → 0xCBF43926).
    @Test func checkValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    /// Every length 0 … 300 (both sides of ``CRC32/shortLength``, every tail length), from several starting values
    /// and alignments: the definition's value, and zlib's for the long ones.
    @Test func everyLengthMatchesTheDefinition() {
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt8 {
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: x >> 56)
        }
        let data = (0..<400).map { _ in next() }
        for start: UInt32 in [0, 0xFFFF_FFFF, 0x1234_5678] {
            for offset in 0..<3 {
                for n in 0...300 {
                    let bytes = Array(data[offset..<offset + n])
                    var c = CRC32(continuing: start)
                    bytes.withUnsafeBytes { c.update($0) }
                    #expect(c.value == reference(start, bytes), "length \(n), offset \(offset)")
                }
            }
        }
    }

    /// A long input summed in one piece (zlib) or in short pieces (sliced) gives one value.
    @Test func piecesAgreeWithOneLongUpdate() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        var whole = CRC32()
        data.withUnsafeBytes { whole.update($0) }
        var pieces = CRC32()
        var i = 0
        for n in [48, 1, 7, 8, 9, 63, 127, 64, 100, 48] + Array(repeating: 29, count: 18) {
            let end = min(data.count, i + n)
            data[i..<end].withUnsafeBytes { pieces.update($0) }
            i = end
        }
        data[i...].withUnsafeBytes { pieces.update($0) }
        #expect(pieces.value == whole.value)
    }
}
