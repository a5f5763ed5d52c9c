import CZlib

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum in every frame header.
///
/// The same function as zlib's `crc32` and Python's `zlib.crc32` (it *is* zlib's, which reads several bytes per
/// step), so any client can check frames. CRC-32 is linear, so the CRC of a concatenation follows from the CRCs
/// of its parts and the second part's length (``combine(_:_:length:)``, zlib's `crc32_combine_op`): fan-out
/// computes an event's shared bytes' CRC once and only the per-session header bytes and trailer per delivery
/// (`Protocol/PROTOCOL.md` §2).
/// - Complexity: ``update(_:)`` is O(n); ``combine(_:_:operator:)`` is O(32) whatever the length.
public struct CRC32: Sendable {
    /// The running value (already finalised; feed more bytes with ``update(_:)``).
    public private(set) var value: UInt32 = 0

    /// Creates an empty checksum (the CRC of no bytes, 0).
    public init() {}

    /// Creates a checksum that continues from `value`, the CRC of bytes already seen.
    public init(continuing value: UInt32) { self.value = value }

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        value = UInt32(
            truncatingIfNeeded: crc32(UInt(value), base.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count))
        )
    }

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) {
            return done
        }
        let copy = Array(bytes)
        copy.withUnsafeBytes { update($0) }
    }

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var c = CRC32()
        c.update(bytes)
        return c.value
    }

    /// The operator that appends `length` bytes in ``combine(_:_:operator:)`` (zlib's `crc32_combine_gen`).
    /// Compute it once per length and reuse it.
    public static func combineOperator(length: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: crc32_combine_gen(.init(length)))
    }

    /// The CRC of `A` followed by `B`, from `crcA`, `crcB` and the operator of `B`'s length
    /// (zlib's `crc32_combine_op`).
    @inline(__always)
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, operator op: UInt32) -> UInt32 {
        UInt32(truncatingIfNeeded: crc32_combine_op(UInt(crcA), UInt(crcB), UInt(op)))
    }

    /// The CRC of `A` followed by `length` bytes whose CRC is `crcB`.
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, length: Int) -> UInt32 {
        combine(crcA, crcB, operator: combineOperator(length: length))
    }
}
