import Testing
@testable import LiveBusClock

@Test func placeholder() {}
