/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum in every frame header.
///
/// The same function as zlib's `crc32` and Python's `zlib.crc32`, so any client can check frames.
/// - Complexity: O(n) with one table lookup per byte.
public struct CRC32: Sendable {
    private static let table: [UInt32] = (0..<256).map { index in
        var c = UInt32(index)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The running value (already finalised; feed more bytes with ``update(_:)``).
    public private(set) var value: UInt32 = 0

    /// Creates an empty checksum (the CRC of no bytes, 0).
    public init() {}

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var c = ~value
        for b in bytes { c = Self.table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        value = ~c
    }

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var c = ~value
        for b in bytes { c = Self.table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        value = ~c
    }

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var c = CRC32()
        c.update(bytes)
        return c.value
    }
}
