// The fuzz executable. Built by tools/fuzz with -sanitize=fuzzer,address and -DLIVEBUS_FUZZ, it is libFuzzer
// (flags as libFuzzer's: -max_total_time=N, corpus directories…). In a normal build it replays the input files it
// is given through the same targets (a crash input from tools/fuzz can be rerun without the sanitizers).
// The mode comes from LIVEBUS_FUZZ_MODE: frames (default) or session.
import Foundation

#if LIVEBUS_FUZZ
    import CFuzzerDriver

    @_cdecl("LLVMFuzzerTestOneInput")
    public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }

    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(
        LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        }
    )
#else
    let files = CommandLine.arguments.dropFirst()
    if files.isEmpty {
        FileHandle.standardError.write(
            Data(
                "usage: LIVEBUS_FUZZ_MODE=frames|session LiveBusFuzz FILE|DIR...\n(replays inputs; tools/fuzz builds the libFuzzer version)\n"
                    .utf8
            )
        )
        exit(2)
    }
    var count = 0
    for path in files {
        var isDir: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDir)
        let paths =
            isDir.boolValue
            ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
            : [path]
        for p in paths {
            guard let d = FileManager.default.contents(atPath: p) else { continue }
            d.withUnsafeBytes { fuzzOne($0) }
            count += 1
        }
    }
    print("replayed \(count) inputs, no crash")
#endif
