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

    /// Adds a few `bytes` to the checksum by slicing-by-8 (Kounavis and Berry, "A Systematic Approach to Building
    /// High Performance Software-based CRC Generators", 2005): eight table lookups per 8 bytes, the same value as
    /// ``update(_:)-(UnsafeRawBufferPointer)``. For short inputs such as an EVENT's 48-byte trailer, where zlib's
    /// call and set-up cost more than the bytes (callgrind: ≈ 350 instructions for 48 bytes through `crc32_z`,
    /// ≈ 150 here); long inputs go to zlib.
    /// - Parameter bytes: The bytes (any length; from 256 on zlib's ``update(_:)-(UnsafeRawBufferPointer)``).
    /// - Complexity: O(n).
    @inline(__always)
    public mutating func updateShort(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count < 256 else { return update(bytes) }
        var crc = ~value
        Self.slicingTables.withUnsafeBufferPointer { t in
            let n = bytes.count
            var p = 0
            while n - p >= 8 {
                let lo = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: p, as: UInt32.self)) ^ crc
                let hi = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: p + 4, as: UInt32.self))
                crc =
                    t[1792 + Int(lo & 0xFF)] ^ t[1536 + Int((lo >> 8) & 0xFF)] ^ t[1280 + Int((lo >> 16) & 0xFF)]
                    ^ t[1024 + Int(lo >> 24)] ^ t[768 + Int(hi & 0xFF)] ^ t[512 + Int((hi >> 8) & 0xFF)]
                    ^ t[256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                p += 8
            }
            while p < n {
                crc = t[Int((crc ^ UInt32(bytes[p])) & 0xFF)] ^ (crc >> 8)
                p += 1
            }
        }
        value = ~crc
    }

    /// The eight 256-entry tables of ``updateShort(_:)``, one after the other: table 0 is the byte-wise table of
    /// the reflected polynomial 0xEDB88320; entry `i` of table `k` is entry `i` of table `k - 1` carried one byte
    /// further.
    static let slicingTables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 2048)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[i] = c
        }
        for k in 1..<8 {
            for i in 0..<256 {
                let prev = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
            }
        }
        return t
    }()

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
