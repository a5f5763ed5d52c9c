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
    ///
    /// Short inputs (under ``shortLength`` bytes: an EVENT's 48-byte trailer, once per delivery) are summed here,
    /// eight bytes per step (slicing-by-8); zlib's `crc32` goes byte by byte below its braided threshold (about
    /// 6.5 instructions a byte, 313 per trailer, callgrind). Longer ones go to zlib. Both give the same value.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if bytes.count < Self.shortLength {
            value = Self.sliced(value, bytes)
            return
        }
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

    /// Inputs shorter than this many bytes are summed by ``sliced(_:_:)``, not by zlib.
    static let shortLength = 128

    /// The CRC (zlib's: reflected, polynomial 0xEDB88320, inverted before and after) of `value`'s input followed
    /// by `bytes`, eight bytes per step.
    /// - Parameters:
    ///   - value: The CRC of the bytes before (0 for none).
    ///   - bytes: The bytes to add.
    /// - Returns: The CRC with `bytes` added.
    @inline(__always)
    static func sliced(_ value: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        let t = sliceTable
        var c = ~value
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            let one = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)) ^ c
            let two = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self))
            c =
                t[1792 + Int(one & 0xFF)] ^ t[1536 + Int((one >> 8) & 0xFF)] ^ t[1280 + Int((one >> 16) & 0xFF)]
                ^ t[1024 + Int(one >> 24)] ^ t[768 + Int(two & 0xFF)] ^ t[512 + Int((two >> 8) & 0xFF)]
                ^ t[256 + Int((two >> 16) & 0xFF)] ^ t[Int(two >> 24)]
            i += 8
        }
        while i < n {
            c = t[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
            i += 1
        }
        return ~c
    }

    /// Slicing-by-8's eight 256-entry tables, one after another: table 0 is the byte-wise table, table k the CRC of
    /// a byte followed by k zero bytes. Never freed; read-only after it is made.
    nonisolated(unsafe) static let sliceTable: UnsafePointer<UInt32> = {
        let t = UnsafeMutablePointer<UInt32>.allocate(capacity: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[i] = c
        }
        for k in 1..<8 {
            for i in 0..<256 {
                let p = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (p >> 8) ^ t[Int(p & 0xFF)]
            }
        }
        return UnsafePointer(t)
    }()

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
