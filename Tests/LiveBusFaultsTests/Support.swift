import LiveBusFaults

/// CRC-32 (IEEE 802.3, zlib's `crc32`), written here so the tests check corruption the way a reader does.
func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
    }
    return ~crc
}

/// A well-formed LiveBus frame (PROTOCOL.md §2): EVENT on `topic` with `sequence`, a JSON body, and its CRC.
func frame(_ sequence: UInt64, topic: String = "orders/A1", body: String = "{\"n\":1}", type: UInt8 = 0x06) -> [UInt8] {
    let topicBytes = Array(topic.utf8)
    let bodyBytes = Array(body.utf8)
    var header: [UInt8] = []
    func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.bigEndian) { header += $0 } }
    append(UInt32(20 + topicBytes.count + bodyBytes.count))
    header += [1, type, 0, 0]
    append(sequence)
    append(UInt16(topicBytes.count))
    append(UInt16(0))
    let crc = crc32(header[4..<20] + topicBytes + bodyBytes)
    append(crc)
    return header + topicBytes + bodyBytes
}

/// True when `bytes` is a frame whose CRC matches (what a reader checks).
func crcMatches(_ bytes: [UInt8]) -> Bool {
    guard bytes.count >= 24 else { return false }
    let stored = bytes[20..<24].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    return stored == crc32(Array(bytes[4..<20]) + Array(bytes[24...]))
}

/// The sequence field of a frame.
func sequenceOf(_ bytes: [UInt8]) -> UInt64 { bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }

/// Splits a byte stream back into frames by their length fields (what a reader does).
func frames(in stream: [UInt8]) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var start = 0
    while stream.count - start >= 4 {
        let length = stream[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
        guard stream.count - start >= 4 + length else { break }
        result.append(Array(stream[start..<start + 4 + length]))
        start += 4 + length
    }
    return result
}

/// The bytes of the `write` actions, concatenated.
func written(_ actions: [FaultAction]) -> [UInt8] {
    actions.flatMap { action -> [UInt8] in
        if case .write(let bytes, _) = action { return bytes }
        return []
    }
}

/// `(bytes, atMs)` of each `write`.
func writes(_ actions: [FaultAction]) -> [(bytes: [UInt8], atMs: Int64)] {
    actions.compactMap { action in
        if case .write(let bytes, let atMs) = action { return (bytes, atMs) }
        return nil
    }
}

/// A virtual-clock loop: sends `inputs` at their times, fires the pipeline's deadline like the daemon's timer, and
/// returns every action with the clock time at which the loop executed it.
func drive(
    _ pipeline: inout FaultPipeline,
    _ inputs: [(atMs: Int64, bytes: [UInt8])],
    wholeFrames: Bool = true,
    until endMs: Int64
) -> [(action: FaultAction, executedAtMs: Int64)] {
    var log: [(FaultAction, Int64)] = []
    var queue = inputs.sorted { $0.atMs < $1.atMs }
    var now: Int64 = 0
    while true {
        let nextSend = queue.first?.atMs
        let deadline = pipeline.nextDeadlineMs
        let candidates = [nextSend, deadline].compactMap { $0 }.filter { $0 <= endMs }
        guard let step = candidates.min() else { break }
        now = max(now, step)
        if let send = queue.first, send.atMs <= now {
            queue.removeFirst()
            for action in pipeline.send(send.bytes, isWholeFrame: wholeFrames, at: now) { log.append((action, now)) }
        } else {
            for action in pipeline.advance(to: now) { log.append((action, now)) }
        }
    }
    return log
}

/// A spec with `params`, validated by the caller's `add`.
func spec(
    _ kind: ToxicKind,
    _ params: ToxicParams = ToxicParams(),
    direction: FaultDirection = .downstream,
    toxicity: Double = 1,
    id: String? = nil
) -> ToxicSpec {
    ToxicSpec(id: id, kind: kind, direction: direction, toxicity: toxicity, params: params)
}
