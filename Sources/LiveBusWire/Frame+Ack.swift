extension Frame {
    /// Appends the daemon's ACK of a PUBLISH: header (`sequence` = the PUBLISH's frame id), the topic and the body
    /// `{"sequence":N}` with N the event's topic sequence (`Protocol/PROTOCOL.md` §5.2) — the bytes
    /// ``encode(type:flags:sequence:topic:body:trailer:version:into:)`` writes for it, written in place from a fixed
    /// layout: no body array, no encoder, one CRC-32 pass over the frame's ~40 bytes.
    /// - Parameters:
    ///   - id: The PUBLISH frame's id, echoed in the header.
    ///   - topic: The topic's UTF-8 bytes (at most ``maximumTopicLength``; the stored event's, already checked).
    ///   - sequence: The topic sequence the event was stored under.
    ///   - buffer: Where the frame is appended.
    public static func appendAck(
        id: UInt64,
        topic: UnsafeRawBufferPointer,
        sequence: UInt64,
        into buffer: inout [UInt8]
    ) {
        precondition(topic.count <= maximumTopicLength)
        // `{"sequence":` + up to 20 digits + `}`.
        withUnsafeTemporaryAllocation(byteCount: 34, alignment: 8) { scratch in
            let prefix: StaticString = "{\"sequence\":"
            var bodyCount = prefix.utf8CodeUnitCount
            prefix.withUTF8Buffer { p in
                let head = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<bodyCount])
                head.copyMemory(from: UnsafeRawBufferPointer(p))
            }
            var digitCount = 1
            var v = sequence
            while v >= 10 {
                v /= 10
                digitCount += 1
            }
            var m = sequence
            for k in stride(from: bodyCount + digitCount - 1, through: bodyCount, by: -1) {
                scratch[k] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
            }
            bodyCount += digitCount
            scratch[bodyCount] = UInt8(ascii: "}")
            bodyCount += 1
            let body = UnsafeRawBufferPointer(rebasing: scratch[0..<bodyCount])
            withUnsafeTemporaryAllocation(byteCount: headerSize, alignment: 8) { header in
                writeHeader(
                    header,
                    length: headerSize + topic.count + bodyCount - 4,
                    version: version,
                    type: .ack,
                    flags: [],
                    sequence: id,
                    topicLength: topic.count,
                    trailerLength: 0
                )
                var crc = CRC32()
                crc.update(UnsafeRawBufferPointer(rebasing: header[4..<20]))
                crc.update(topic)
                crc.update(body)
                header.storeBytes(of: crc.value.bigEndian, toByteOffset: 20, as: UInt32.self)
                buffer.append(contentsOf: UnsafeRawBufferPointer(header))
                buffer.append(contentsOf: topic)
                buffer.append(contentsOf: body)
            }
        }
    }
}
