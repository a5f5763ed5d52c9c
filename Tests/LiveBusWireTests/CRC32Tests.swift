import Testing

@testable import LiveBusWire

/// ``CRC32``: short inputs summed eight bytes per step (``CRC32/updateShort(_:)``) give zlib's value.
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

    /// The check value of the CRC-32 catalogue ("123456789" → 0xCBF43926), through both paths.
    @Test func checkValue() {
        var c = CRC32()
        Array("123456789".utf8).withUnsafeBytes { c.updateShort($0) }
        #expect(c.value == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    /// Every length 0 … 300 (both sides of the 256-byte hand-over to zlib, every tail length), from several
    /// starting values and alignments: the definition's value, and zlib's.
    @Test func everyLengthMatchesTheDefinitionAndZlib() {
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
                    var sliced = CRC32(continuing: start)
                    var zlib = CRC32(continuing: start)
                    bytes.withUnsafeBytes {
                        sliced.updateShort($0)
                        zlib.update($0)
                    }
                    #expect(sliced.value == reference(start, bytes), "length \(n), offset \(offset)")
                    #expect(sliced.value == zlib.value, "length \(n), offset \(offset)")
                }
            }
        }
    }
}
