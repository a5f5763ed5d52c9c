import Foundation
import Testing

/// The fuzz seed corpus (the golden vectors, the crashing frames, and every crash `tools/fuzz` found, kept in
/// Tests/Fuzz/corpus) replayed through the fuzz targets in the normal build: the frame decoder and a real daemon
/// session per input. A crash of any input fails this test. Source: issue 14 "Every crash found becomes a regression
/// test".
struct FuzzCorpusReplayTests {
    @Test(arguments: ["frames", "session"])
    func seedCorpusReplaysWithoutACrash(_ mode: String) throws {
        let root = E2ECLIGoldenTests.root.path
        let corpus = root + "/Tests/Fuzz/corpus/" + mode
        let count = try FileManager.default.contentsOfDirectory(atPath: corpus).count
        #expect(count > 40)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/LiveBusFuzz")
        p.arguments = [corpus]
        p.environment = ["LIVEBUS_FUZZ_MODE": mode]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "LiveBusFuzz \(mode) exited \(p.terminationStatus)")
        #expect(text.contains("replayed \(count) inputs, no crash"), "\(text)")
    }
}
