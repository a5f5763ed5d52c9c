import Testing
@testable import LiveBusScheduler

@Test func placeholder() {}
