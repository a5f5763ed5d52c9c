import Testing
@testable import LiveBusDaemon

@Test func placeholder() {}
